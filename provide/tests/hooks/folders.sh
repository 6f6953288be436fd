#!/bin/sh
# A test hook (exec mode): a folder per consumer under $FOLDERS_ROOT holding
# its credentials; `disabled` in it when retired. With FOLDERS_LAX set its
# check proves nothing (for the test of a failing rule). Needs jq.
set -eu
root=${FOLDERS_ROOT:?FOLDERS_ROOT is not set}
req=$(cat)
field() { printf '%s' "$req" | jq -r "$1"; }
case "$1" in
hello) echo '{"name":"folders"}' ;;
ensure)
  name=$(field .consumer.name)
  secret=$(field .secret)
  mkdir -p "$root/$name"
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
  name=$(field .consumer.name)
  secret=$(field .secret)
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
  for dir in "$root"/*/; do
    [ -d "$dir" ] || continue
    name=$(basename "$dir")
    retired=false
    [ -e "$dir/disabled" ] && retired=true
    printf '{"consumer":"%s","retired":%s}\n' "$name" "$retired"
  done | jq -sc '{held: .}' ;;
retire) touch "$root/$(field .consumer)/disabled" 2>/dev/null || true; echo '{"ok":true}' ;;
re-enable) rm -f "$root/$(field .consumer)/disabled"; echo '{"ok":true}' ;;
delete) rm -rf "${root:?}/$(field .consumer)"; echo '{"ok":true}' ;;
*) echo '{"unsupported":true}' ;;
esac
