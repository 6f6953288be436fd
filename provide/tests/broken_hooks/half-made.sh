#!/usr/bin/env bash
# files.sh with one planted fault: see FAULT=half-made there.
FAULT=half-made exec "${0%/*}/files.sh" "$@"
