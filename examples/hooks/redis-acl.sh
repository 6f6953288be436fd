#!/bin/sh
# redis-acl.sh: a mesh-provide hook (exec mode) that gives each consumer a
# Redis ACL user named after it, allowed the keys `<consumer>:*`, logging in
# with the consumer's minted secret.
#
#   mesh-provide --hook examples/hooks/redis-acl.sh --contributions c.json ...
#   mesh-provide conform --hook examples/hooks/redis-acl.sh
#
# Its own configuration, from its environment (mesh-provide passes its
# environment on, without the MESH_* variables):
#   REDIS_ACL_HOST                 the Redis server (default 127.0.0.1)
#   REDIS_ACL_PORT                 its port (default 6379)
#   REDIS_ACL_ADMIN_USER           the ACL user the hook acts as (default mesh-admin)
#   REDIS_ACL_ADMIN_PASSWORD_FILE  a file holding that user's password (required)
# The administrator needs `+@all ~*` (it makes, changes and deletes users,
# ends a retired user's connections, deletes a deleted consumer's keys):
#   user mesh-admin on >PASSWORD ~* &* +@all
#
# What it does, per verb (JSON request on stdin, JSON reply on stdout):
#   hello      {"name":"redis-acl","secrets":[<admin password>]}
#   ensure     a user it did not make yet: made, `on`, its password the
#              secret, keys `~<consumer>:*`, no channels, `+@all -@dangerous`;
#              a user it made: its password and keys brought back to those
#              when they differ (a rotated secret, or a change by hand),
#              said as `mended`; on/off is left as it is (re-enabling a
#              retired user is the loop's call). A user of that name it did
#              not make is refused, never touched.
#   check      AUTH as the consumer with its secret, then PING.
#   held       every user this provider instance made: they carry the key
#              pattern `%R~_mesh-provide:<module>@<machine>` (read-only, on
#              a key no consumer's pattern can match: names never start
#              with `_`), its mark, naming the instance (the request's
#              `provider`, else MESH_PROVIDER). Users without it are never
#              listed or changed: another instance's (`ensure` refuses
#              them, naming it; the other verbs leave them be), a person's,
#              and those marked `%R~_mesh-provide` alone (before marks named
#              their instance): `ensure` adopts one of those for the
#              instance that lists its consumer, setting its mark.
#   retire     `off`, and its connections ended; re-enable: `on`.
#   delete     its keys (`<consumer>:*`, by SCAN) and the user deleted.
#   by-hand    conform's oracle, as a person at redis-cli would: change
#              sets another password, make makes a user without the mark,
#              works and reach log in as the user (reach: to the target's
#              keys), remove deletes what make made.
#   probe, repair: unsupported (no known fault).
#
# The administrator's password file is read at every call (each call is a
# new connection) and the password is said in every reply's `secrets`, so
# a rotation needs no restart and is redacted at once. Every redis-cli run
# is bounded by what is left of the call's deadline (the request's
# `deadline_ms`, else MESH_HOOK_TIMEOUT_MS, else 30 s): one that has not
# answered by then is killed, and the call fails, unreachable.
#
# Secrets travel only through pipes: the request is read from stdin, every
# redis-cli command (the administrator's AUTH included) is written to
# redis-cli's stdin, each argument quoted (byte by byte, \xHH, unless it
# is made of characters redis-cli takes as they are); no secret is ever in
# an argument or an environment variable of any process. Needs redis-cli
# (Debian `redis-tools`, with `redis-server`), jq, od, sha256sum, timeout,
# date.
#
# A jq starts in about 30 ms of CPU (jq 1.6): a call that succeeds runs it
# three times at most (the request, the ACL it reads, the reply) and does
# the rest with the shell's own words where it can.
set -eu

host=${REDIS_ACL_HOST:-127.0.0.1}
port=${REDIS_ACL_PORT:-6379}
admin_user=${REDIS_ACL_ADMIN_USER:-mesh-admin}
# The mark's stem: `$stem:<module>@<machine>` is an instance's mark; the stem
# alone, a mark from before instances.
stem='%R~_mesh-provide'
verb=${1:-}

started=$(date +%s%N)
admin_pw=

# Prints the reply the jq FILTER makes of TEXT, with the administrator's
# password, once read, as its `secrets` (and cut out of its error). The
# password reaches jq on its stdin (printf is the shell's own), never a
# command line.
say() { # FILTER TEXT [JQ OPTIONS...]
  filter=$1 text=$2
  shift 2
  { printf '%s\n' "$admin_pw"; printf '%s' "$text"; } | jq -Rsc "$@" '
    index("\n") as $i | .[:$i] as $pw | (.[$i + 1:] | '"$filter"')
    | if $pw == "" then . else
        (if .error then .error |= (split($pw) | join("[redacted]")) else . end) + {secrets: [$pw]}
      end'
}

# Replies and exits. Every function that may fail is called directly, never
# inside $(...) or a pipeline, so a failure ends the hook with one reply.
reply() { say fromjson "$1"; exit 0; } # JSON
fail() { # CLASS WORDS...
  class=$1
  shift
  say '{ok: false, class: $class, error: .}' "$*" --arg class "$class"
  exit 1
}

nl='
'

[ -n "${REDIS_ACL_ADMIN_PASSWORD_FILE:-}" ] || fail refused "REDIS_ACL_ADMIN_PASSWORD_FILE is not set"
[ -r "$REDIS_ACL_ADMIN_PASSWORD_FILE" ] || fail refused "the admin password file $REDIS_ACL_ADMIN_PASSWORD_FILE cannot be read"
admin_pw=$(tr -d '\r\n' < "$REDIS_ACL_ADMIN_PASSWORD_FILE")
[ -n "$admin_pw" ] || fail refused "the admin password file $REDIS_ACL_ADMIN_PASSWORD_FILE is empty"

# The request's fields, read from stdin with one jq, each said as a shell
# assignment (@sh quotes it) and run here: the consumer (`.consumer.name`
# for ensure and check, `.consumer` for the others), its secret, the
# provider instance, the call's deadline, and by-hand's action and target.
# A field the request does not hold is empty.
name= secret= provider= deadline_ms= action= target=
fields=$(jq -r '
  def text: if . == null then "" else tostring end;
  @sh "name=\(.consumer | if type == "object" then .name else . end | text)",
  @sh "secret=\(.secret | text)",
  @sh "provider=\(.provider | text)",
  @sh "deadline_ms=\(.deadline_ms | if type == "number" then floor else null end | text)",
  @sh "action=\(.action | text)",
  @sh "target=\(.target | text)"') || fail refused "the request is not a JSON object"
eval "$fields"

# The provider instance the call is made for, and its mark.
provider=${provider:-${MESH_PROVIDER:-}}
case "$verb" in
hello) ;;
*) printf '%s' "$provider" | grep -Eqx '[a-z0-9][a-z0-9_-]{0,62}@[a-z0-9][a-z0-9_-]{0,62}' ||
  fail refused "the request names no provider instance (module@machine) and MESH_PROVIDER is not set" ;;
esac
mark="$stem:$provider"

# The call's bound, in milliseconds from $started.
case "$deadline_ms" in
'' | *[!0-9]*) deadline_ms=${MESH_HOOK_TIMEOUT_MS:-30000} ;;
esac

# A redis-cli argument holding any bytes, quoted: as it is when redis-cli
# takes each of its characters as it is inside quotes, else every byte
# written \xHH.
quoted() {
  case $1 in
  *[!A-Za-z0-9_.:@~%*+/=\>-]*)
    printf '"'
    printf '%s' "$1" | od -An -v -tx1 | tr -d ' \n' | sed 's/../\\x&/g'
    printf '"' ;;
  *) printf '"%s"' "$1" ;;
  esac
}

errors=$(mktemp)
trap 'rm -f "$errors"' EXIT

# Runs COMMANDS (one a line) through redis-cli logged in as USER with
# PASSWORD; $out is then their replies, one JSON value a line. Returns 2
# when the login was refused ($errors holds why); an unreachable server
# ends the hook.
as() { # USER PASSWORD COMMANDS
  # What is left of the deadline, 50 ms kept for the reply.
  left=$((deadline_ms - ($(date +%s%N) - started) / 1000000 - 50))
  [ "$left" -gt 0 ] || fail unreachable "the call's deadline (${deadline_ms} ms) passed before Redis at $host:$port was asked"
  status=0
  out=$(printf 'AUTH %s %s\n%s\n' "$(quoted "$1")" "$(quoted "$2")" "$3" |
    timeout -k 1 "$((left / 1000)).$(printf '%03d' $((left % 1000)))" \
      redis-cli -h "$host" -p "$port" -2 --json 2>"$errors") || status=$?
  [ "$status" -ne 124 ] && [ "$status" -ne 137 ] ||
    fail unreachable "Redis at $host:$port did not answer within the call's deadline (${deadline_ms} ms)"
  first=${out%%"$nl"*}
  case "$first" in
  '"OK"')
    case "$out" in
    *"$nl"*) out=${out#*"$nl"} ;;
    *) out= ;;
    esac ;;
  error:*) printf '%s' "${first#error:}" | jq -r . >"$errors"; return 2 ;;
  *)
    # Not reached, or the connection lost before a reply: unreachable.
    grep -Eq 'Could not connect|Connection refused|Connection reset|Server closed the connection|timed out' "$errors" &&
      fail unreachable "$(head -n 1 "$errors")"
    fail refused "redis-cli said nothing: $(head -n 1 "$errors")" ;;
  esac
}

admin() { # COMMANDS
  as "$admin_user" "$admin_pw" "$1" || fail credentials-rejected "the hook's administrator $admin_user was refused: $(cat "$errors")"
}

# Fails when a reply in $out is an error (redis-cli writes `error:"..."`).
must_ok() { # WHAT
  case "$nl$out" in
  *"${nl}error:"*)
    bad=$(printf '%s\n' "$out" | grep '^error:' | head -n 1)
    fail refused "$1: $(printf '%s' "${bad#error:}" | jq -r .)" ;;
  esac
}

# The user NAME as ACL GETUSER says it, read with one jq: $found is `user`,
# or `null` when there is none; $maker the instance its mark names, `-` for
# a mark from before instances, empty when unmarked; $found_passwords its
# passwords' hashes (space-separated) and $found_keys its key patterns.
look_up() { # NAME
  admin "ACL GETUSER $(quoted "$1")"
  must_ok "looking up user $1"
  eval "$(printf '%s' "$out" | jq -r --arg stem "$stem" '
    (if . == null then null else [range(0; length; 2) as $i | {(.[$i]): .[$i + 1]}] | add end) as $user
    | ($user.keys // "") as $keys
    | ([$keys | split(" ")[] | select(. == $stem or startswith($stem + ":"))]
       | if length == 0 then "" elif .[0] == $stem then "-" else .[0][($stem | length) + 1:] end) as $maker
    | @sh "found=\(if $user == null then "null" else "user" end) maker=\($maker)",
      @sh "found_passwords=\($user.passwords // [] | join(" ")) found_keys=\($keys)"')"
}

# Whether NAME is a user this instance made (returns 1 when not: none,
# another instance's, one from before instances, or a person's).
ours() { # NAME
  look_up "$1"
  [ "$found" != null ] && [ "$maker" = "$provider" ]
}

# Deletes the keys `NAME:*` (by SCAN, in a script at Redis) and the user.
delete_user() { # NAME
  script='local c = "0" repeat local r = redis.call("SCAN", c, "MATCH", ARGV[1], "COUNT", 1000) c = r[1] for _, k in ipairs(r[2]) do redis.call("UNLINK", k) end until c == "0" return 1'
  admin "EVAL $(quoted "$script") 0 $(quoted "$1:*")
ACL DELUSER $(quoted "$1")"
  must_ok "deleting user $1"
}

case "$verb" in
hello)
  reply '{"name":"redis-acl","repairs":[]}' ;;
ensure)
  [ -n "$secret" ] || fail refused "ensure of $name: the request holds no secret"
  look_up "$name"
  if [ "$found" = null ]; then
    admin "ACL SETUSER $(quoted "$name") reset on $(quoted ">$secret") $(quoted "~$name:*") $(quoted "$mark") resetchannels +@all -@dangerous"
    must_ok "making user $name"
    reply '{"ok":true}'
  fi
  case "$maker" in
  "$provider") held_mark=$mark ;;
  -) held_mark=$stem ;; # from before instances: adopted below
  '') fail refused "user $name exists and was not made by this hook (no $stem): not touching it; remove it (ACL DELUSER $name) to let the hook make it" ;;
  *) fail refused "user $name was made by $maker (its mark $stem:$maker): not touching it" ;;
  esac
  want=$(printf '%s' "$secret" | sha256sum | cut -d' ' -f1)
  changed=
  [ "$found_passwords" = "$want" ] || changed="its password"
  [ "$found_keys" = "~$name:* $held_mark" ] || changed="${changed:+$changed and }its key patterns"
  [ -z "$changed" ] && [ "$held_mark" = "$mark" ] && reply '{"ok":true}'
  admin "ACL SETUSER $(quoted "$name") resetpass $(quoted ">$secret") resetkeys $(quoted "~$name:*") $(quoted "$mark")"
  must_ok "mending user $name"
  [ -z "$changed" ] && reply '{"ok":true}'
  reply "{\"ok\":true,\"mended\":\"brought $changed to what the mesh asks\"}" ;;
check)
  [ -n "$secret" ] || fail refused "check of $name: the request holds no secret"
  as "$name" "$secret" PING || fail credentials-rejected "$(cat "$errors")"
  [ "$out" = '"PONG"' ] || fail refused "PING as $name answered $out"
  reply '{"ok":true}' ;;
held)
  admin 'ACL LIST'
  must_ok "listing users"
  reply "$(printf '%s' "$out" | jq -c --arg mark "$mark" '[ .[] | split(" ") | select(index($mark) != null)
    | {consumer: .[1], retired: (.[2] == "off")} ] | {held: .}')" ;;
retire)
  ours "$name" || reply '{"ok":true}'
  admin "ACL SETUSER $(quoted "$name") off"
  must_ok "retiring user $name"
  # Its connections end (none may be open: that answer is no failure).
  admin "CLIENT KILL USER $(quoted "$name")"
  reply '{"ok":true}' ;;
re-enable)
  ours "$name" || reply '{"ok":true}'
  admin "ACL SETUSER $(quoted "$name") on"
  must_ok "re-enabling user $name"
  reply '{"ok":true}' ;;
delete)
  ours "$name" || reply '{"ok":true}'
  delete_user "$name"
  reply '{"ok":true}' ;;
by-hand)
  needs_secret() { [ -n "$secret" ] || fail refused "by hand: $action needs a secret"; }
  case "$action" in
  change)
    admin "ACL GETUSER $(quoted "$name")"
    [ "$out" != null ] || fail refused "by hand: there is no user $name to change"
    other=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
    admin "ACL SETUSER $(quoted "$name") resetpass $(quoted ">$other")"
    must_ok "changing user $name by hand"
    reply '{"ok":true}' ;;
  make)
    needs_secret
    admin "ACL SETUSER $(quoted "$name") reset on $(quoted ">$secret") $(quoted "~$name:*") resetchannels +@all -@dangerous"
    must_ok "making user $name by hand"
    reply '{"ok":true}' ;;
  works)
    needs_secret
    if as "$name" "$secret" "EXISTS $(quoted "$name:mesh-check")" && ! printf '%s\n' "$out" | grep -q '^error:'; then
      reply '{"ok":true,"works":true}'
    fi
    reply '{"ok":true,"works":false}' ;;
  reach)
    needs_secret
    [ -n "$target" ] || fail refused "by hand: reach needs a target"
    as "$name" "$secret" "EXISTS $(quoted "$target:mesh-check")
SET $(quoted "$target:mesh-reach") 1" ||
      fail refused "by hand: $name cannot log in to try reaching $target: $(cat "$errors")"
    # One reply a line: any that is not an error (NOPERM) reached.
    if printf '%s\n' "$out" | grep -v '^error:' | grep -q .; then
      admin "DEL $(quoted "$target:mesh-reach")"
      reply '{"ok":true,"reaches":true}'
    fi
    reply '{"ok":true,"reaches":false}' ;;
  remove)
    admin "ACL GETUSER $(quoted "$name")"
    [ "$out" = null ] && reply '{"ok":true}'
    delete_user "$name"
    reply '{"ok":true}' ;;
  *)
    reply '{"unsupported":true}' ;;
  esac ;;
*)
  reply '{"unsupported":true}' ;;
esac
