#!/usr/bin/env bash
# files.sh with one planted fault: see FAULT=wildcard there.
FAULT=wildcard exec "$(dirname "$0")/files.sh" "$@"
