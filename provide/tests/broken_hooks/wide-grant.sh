#!/usr/bin/env bash
# files.sh with one planted fault: see FAULT=wide-grant there.
FAULT=wide-grant exec "${0%/*}/files.sh" "$@"
