#!/usr/bin/env bash
# files.sh with one planted fault: see FAULT=silent there.
FAULT=silent exec "${0%/*}/files.sh" "$@"
