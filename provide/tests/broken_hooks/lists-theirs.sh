#!/usr/bin/env bash
# files.sh with one planted fault: see FAULT=lists-theirs there.
FAULT=lists-theirs exec "${0%/*}/files.sh" "$@"
