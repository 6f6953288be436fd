#!/usr/bin/env bash
# files.sh with one planted fault: see FAULT=wildcard there.
FAULT=wildcard exec "${0%/*}/files.sh" "$@"
