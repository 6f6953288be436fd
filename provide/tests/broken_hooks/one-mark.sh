#!/usr/bin/env bash
# files.sh with one planted fault: see FAULT=one-mark there.
FAULT=one-mark exec "${0%/*}/files.sh" "$@"
