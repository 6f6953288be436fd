#!/usr/bin/env bash
# files.sh with one planted fault: see FAULT=leftovers there.
FAULT=leftovers exec "${0%/*}/files.sh" "$@"
