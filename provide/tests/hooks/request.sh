# Sourced by the test hooks (tests/hooks/folders.sh,
# tests/broken_hooks/files.sh): `parse REQUEST` sets id, verb, name (the
# consumer's), secret, action, target and provider from one request.
#
# By bash's regular expressions, not jq: jq 1.6 takes 25 ms of CPU to
# start, and the conform tests started it about 3,500 times, once or
# three times a call (two thirds of their CPU). mesh-provide writes each
# field once, a consumer object with its name before the object nested in
# it (its options), and every string here (tokens, conform's secrets)
# without an escape. A request with a `\` sets verb `escaped` and nothing
# else, so an escape is never misread: the hook refuses it.
re_id='"id":([0-9]+)'
re_name='"consumer":(\{[^{}]*"name":)?"([^"]*)"'
parse() {
  local req=$1 key re
  id= verb= name= secret= action= target= provider=
  [[ $req =~ $re_id ]] && id=${BASH_REMATCH[1]}
  [[ $req == *\\* ]] && { verb=escaped; return; }
  [[ $req =~ $re_name ]] && name=${BASH_REMATCH[2]}
  for key in verb secret action target provider; do
    re="\"$key\":\"([^\"]*)\""
    [[ $req =~ $re ]] && printf -v "$key" '%s' "${BASH_REMATCH[1]}"
  done
  return 0
}
