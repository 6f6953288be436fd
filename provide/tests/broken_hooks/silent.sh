#!/usr/bin/env bash
# files.sh with one planted fault: see FAULT=silent there.
FAULT=silent exec "$(dirname "$0")/files.sh" "$@"
