#!/usr/bin/env bash
# A test hook (exec mode): a folder per consumer under $FOLDERS_ROOT holding
# its credentials; `disabled` in it when retired; `by` naming the provider
# instance that made it (the request's `provider`): held lists only the
# asking instance's, and no other instance's is changed (a folder without
# `by` is adopted by the next ensure). With FOLDERS_LAX set its check
# proves nothing (for the test of a failing rule). Needs bash.
set -eu
root=${FOLDERS_ROOT:?FOLDERS_ROOT is not set}
# parse REQUEST: its fields (request.sh beside this hook).
. "${BASH_SOURCE[0]%/*}/request.sh"
parse "$(</dev/stdin)"
provider=${provider:-${MESH_PROVIDER:-}}
# Whether the folder $1 was made by the asking instance.
mine() { [ "$(cat "$root/$1/by" 2>/dev/null)" = "$provider" ]; }
[ "$verb" = escaped ] || verb=$1
case "$verb" in
escaped)
  echo '{"ok":false,"class":"refused","error":"a request with an escape: this test hook reads none"}'; exit 1 ;;
hello) echo '{"name":"folders"}' ;;
ensure)
  by=$(cat "$root/$name/by" 2>/dev/null) || by=
  if [ -n "$by" ] && [ "$by" != "$provider" ]; then
    printf '{"ok":false,"class":"refused","error":"%s was made by %s"}\n' "$name" "$by"; exit 1
  fi
  mkdir -p "$root/$name"
  [ -n "$by" ] || printf '%s' "$provider" > "$root/$name/by"
  file="$root/$name/credentials"
  if [ ! -f "$file" ]; then
    printf '%s' "$secret" > "$file"
    echo '{"ok":true}'
  elif [ "$(cat "$file")" = "$secret" ]; then
    echo '{"ok":true}'
  else
    printf '%s' "$secret" > "$file"
    echo '{"ok":true,"mended":"credentials set to the minted secret"}'
  fi ;;
check)
  dir="$root/$name"
  if [ -e "$dir/disabled" ]; then
    echo '{"ok":false,"class":"refused","error":"the folder is disabled"}'; exit 1
  elif [ ! -f "$dir/credentials" ]; then
    echo '{"ok":false,"error":"no credentials"}'; exit 1
  elif [ -z "${FOLDERS_LAX:-}" ] && [ "$(cat "$dir/credentials")" != "$secret" ]; then
    echo '{"ok":false,"class":"credentials-rejected","error":"credentials differ"}'; exit 1
  fi
  echo '{"ok":true}' ;;
held)
  lines=$(for dir in "$root"/*/; do
    [ -d "$dir" ] || continue
    name=$(basename "$dir")
    mine "$name" || continue
    retired=false
    [ -e "$dir/disabled" ] && retired=true
    printf '{"consumer":"%s","retired":%s}\n' "$name" "$retired"
  done)
  printf '{"held":[%s]}\n' "${lines//$'\n'/,}" ;;
retire|re-enable|delete)
  if mine "$name"; then
    case "$1" in
    retire) touch "$root/$name/disabled" ;;
    re-enable) rm -f "$root/$name/disabled" ;;
    delete) rm -rf "${root:?}/$name" ;;
    esac
  fi
  echo '{"ok":true}' ;;
*) echo '{"unsupported":true}' ;;
esac
