#!/usr/bin/env bash
# files.sh with one planted fault: see FAULT=lists-theirs there.
FAULT=lists-theirs exec "$(dirname "$0")/files.sh" "$@"
