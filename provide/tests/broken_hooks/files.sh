#!/usr/bin/env bash
# A test hook over a tiny backend of files (needs bash and flock): what
# `mesh-provide conform` is tested against. Exec mode (`files.sh VERB`, the
# request on stdin) or serve mode (`files.sh serve`, JSON lines with ids).
#
# The backend, under $FILES_ROOT:
#   ours/NAME/credentials  the consumer's password (its provision)
#   ours/NAME/disabled     present while it is retired
#   ours/NAME/grant        what NAME's login may reach (a name)
#   ours/NAME/by           the provider instance that made it (the
#                          request's `provider`, module@machine): its mark.
#                          One without it was made before instances were
#                          marked: listed by none, adopted by the next ensure
#   index                  what it made, one a line: `NAME INSTANCE` (held
#                          lists the asking instance's; a line of a NAME
#                          alone is from before instances: listed by none)
#   theirs/NAME/credentials  made by hand (by-hand make): not the hook's
#
# Correct unless FAULT names one planted fault (each broken_hooks/*.sh sets one):
#   leftovers     delete drops its name from the index unlocked, read then
#                 written (deletes at once lose each other's: names left listed)
#   lists-theirs  held lists what was made by hand too
#   wildcard      retire and delete read `_` in a name as any character
#   wide-grant    a grant reads `_` as any character (as MySQL's does)
#   silent        ensure brings a changed password back without saying so
#   half-made     an ensure cut off between making a user and writing its
#                 password leaves one the next ensure refuses
#   one-mark      its mark names no instance (as before instances): held
#                 lists, and every verb acts on, what any instance made
set -uo pipefail
root=${FILES_ROOT:?FILES_ROOT is not set}
fault=${FAULT:-}
[ -d "$root/theirs" ] || mkdir -p "$root/ours" "$root/theirs"
[ -e "$root/index" ] || : >>"$root/index"

ok() { printf '{"ok":true%s}\n' "${1:+,$1}"; }
no() { printf '{"ok":false,"class":"%s","error":"%s"}\n' "$1" "$2"; return 1; }
locked() { flock "$root/lock" "$@"; }

# index_add NAME INSTANCE (its line from before instances, if any, replaced)
# / index_drop NAME INSTANCE (under the lock)
index_add() {
  grep -qxF "$1 $2" "$root/index" && return 0
  grep -vxF "$1" "$root/index" > "$root/index.$$"; mv "$root/index.$$" "$root/index"
  printf '%s %s\n' "$1" "$2" >> "$root/index"
}
index_drop() { grep -vxF "$1 $2" "$root/index" > "$root/index.$$"; mv "$root/index.$$" "$root/index"; }
export -f index_add index_drop
export root

# Whether NAME was made by the instance asking ($provider).
mine() { [ "$fault" = one-mark ] && [ -d "$root/ours/$1" ] || [ "$(cat "$root/ours/$1/by" 2>/dev/null)" = "$provider" ]; }

# The names a retire or delete of NAME acts on: NAME, or with the fault
# every one where `_` stands for any character; only the asking instance's.
targets() {
  local n
  if [ "$fault" = wildcard ]; then
    local pattern=${1//_/?} dir
    for dir in "$root"/ours/$pattern; do
      [ -d "$dir" ] || continue
      n=$(basename "$dir")
      mine "$n" && printf '%s\n' "$n"
    done
  else
    [ -d "$root/ours/$1" ] && mine "$1" && printf '%s\n' "$1"
  fi
  return 0
}

ensure() {
  local name=$1 secret=$2 dir="$root/ours/$1"
  if [ -d "$dir" ] && [ ! -f "$dir/credentials" ] && [ "$fault" = half-made ]; then
    no refused "user $name exists without a password"; return
  fi
  local by
  by=$(cat "$dir/by" 2>/dev/null) || by=
  if [ -n "$by" ] && [ "$by" != "$provider" ] && [ "$fault" != one-mark ]; then
    no refused "$name was made by $by"; return
  fi
  if [ ! -d "$dir" ]; then
    mkdir -p "$dir"
    printf '%s' "$provider" > "$dir/by"
    locked bash -c 'index_add "$0" "$1"' "$name" "$provider"
    sleep 0.5 # making a user takes a while: a cut lands here
  else
    # A cut between mkdir and the index left one held does not list; one
    # made before instances were marked is adopted (its consumer is listed).
    [ -n "$by" ] || printf '%s' "$provider" > "$dir/by"
    locked bash -c 'index_add "$0" "$1"' "$name" "$provider"
  fi
  local grant=$name
  [ "$fault" = wide-grant ] && grant=${name//_/?}
  printf '%s' "$grant" > "$dir/grant"
  if [ ! -f "$dir/credentials" ]; then
    printf '%s' "$secret" > "$dir/credentials.new" && mv "$dir/credentials.new" "$dir/credentials"
    ok
  elif [ "$(cat "$dir/credentials")" = "$secret" ]; then
    ok
  else
    printf '%s' "$secret" > "$dir/credentials.new" && mv "$dir/credentials.new" "$dir/credentials"
    if [ "$fault" = silent ]; then ok; else ok '"mended":"the password differed: set to the minted one"'; fi
  fi
}

check() {
  local name=$1 secret=$2 dir="$root/ours/$1"
  if [ -e "$dir/disabled" ]; then no refused "user $name is disabled"
  elif [ ! -f "$dir/credentials" ]; then no refused "no user $name"
  elif [ "$(cat "$dir/credentials")" != "$secret" ]; then no credentials-rejected "password authentication failed for $name"
  else ok; fi
}

held() {
  local name by retired
  while read -r name by; do
    [ -n "$name" ] || continue
    [ "$by" = "$provider" ] || { [ "$fault" = one-mark ] && [ -n "$by" ]; } || continue
    retired=false
    [ -e "$root/ours/$name/disabled" ] && retired=true
    printf '{"consumer":"%s","retired":%s}\n' "$name" "$retired"
  done < "$root/index"
  if [ "$fault" = lists-theirs ]; then
    for dir in "$root"/theirs/*/; do
      [ -d "$dir" ] && printf '{"consumer":"%s","retired":false}\n' "$(basename "$dir")"
    done
  fi
  return 0
}

retire() { local n; for n in $(targets "$1"); do touch "$root/ours/$n/disabled"; done; ok; }
re_enable() { if mine "$1"; then rm -f "$root/ours/$1/disabled"; fi; ok; }
delete() {
  local n by
  for n in $(targets "$1"); do
    by=$(cat "$root/ours/$n/by" 2>/dev/null) || by=$provider
    rm -rf "${root:?}/ours/$n"
    if [ "$fault" = leftovers ]; then
      local kept
      kept=$(grep -vxF "$n $by" "$root/index")
      sleep 0.3 # a window for another delete to lose this one
      printf '%s\n' "$kept" > "$root/index"
    else
      locked bash -c 'index_drop "$0" "$1"' "$n" "$by"
    fi
  done
  ok
}

# by-hand ACTION NAME SECRET TARGET: as a person would, beside the hook.
by_hand() {
  local action=$1 name=$2 secret=$3 target=$4
  case "$action" in
  change) printf '%s' "changed by hand" > "$root/ours/$name/credentials"; ok ;;
  make) mkdir -p "$root/theirs/$name"; printf '%s' "$secret" > "$root/theirs/$name/credentials"; ok ;;
  works)
    local works=false
    [ "$(cat "$root/theirs/$name/credentials" 2>/dev/null)" = "$secret" ] && works=true
    ok "\"works\":$works" ;;
  reach)
    local reaches=false dir="$root/ours/$name" grant
    if [ ! -e "$dir/disabled" ] && [ "$(cat "$dir/credentials" 2>/dev/null)" = "$secret" ]; then
      grant=$(cat "$dir/grant")
      # shellcheck disable=SC2053 # the grant is a pattern (with the fault, `_` is `?`)
      [[ $target == $grant ]] && reaches=true
    fi
    ok "\"reaches\":$reaches" ;;
  remove) rm -rf "${root:?}/theirs/$name"; ok ;;
  *) echo '{"unsupported":true}' ;;
  esac
}

# parse REQUEST: its fields (tests/hooks/request.sh).
. "${BASH_SOURCE[0]%/*}/../hooks/request.sh"

# answer VERB NAME SECRET ACTION TARGET
answer() {
  local verb=$1 name=$2 secret=$3 action=$4 target=$5
  case "$verb" in
  hello) echo '{"name":"files"}' ;;
  ensure) ensure "$name" "$secret" ;;
  check) check "$name" "$secret" ;;
  held) local lines; lines=$(held); printf '{"held":[%s]}\n' "${lines//$'\n'/,}" ;;
  retire) retire "$name" ;;
  re-enable) re_enable "$name" ;;
  delete) delete "$name" ;;
  by-hand) by_hand "$action" "$name" "$secret" "$target" ;;
  escaped) no refused "a request with an escape: this test hook reads none" ;;
  *) echo '{"unsupported":true}' ;;
  esac
}

if [ "${1:-}" = serve ]; then
  while IFS= read -r line; do
    parse "$line"
    provider=${provider:-${MESH_PROVIDER:-}}
    reply=$(answer "$verb" "$name" "$secret" "$action" "$target")
    # Every reply is one object on one line: the id goes in before its `}`.
    printf '%s,"id":%s}\n' "${reply%\}}" "$id"
  done
else
  parse "$(</dev/stdin)"
  [ "$verb" = escaped ] || verb=$1
  provider=${provider:-${MESH_PROVIDER:-}}
  answer "$verb" "$name" "$secret" "$action" "$target"
fi
