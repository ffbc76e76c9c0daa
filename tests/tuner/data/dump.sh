#!/bin/bash
# SPDX-License-Identifier: MIT
# A recording as reviewable text: dump.sh DB OUT.sql writes the results database DB as SQL that
# `sqlite3 NEW.sqlite < OUT.sql` loads back into the same database: bkm's application id and
# schema version (header fields `.dump` leaves out), then `sqlite3 DB .dump` (every table, row and
# index; numbers written so that they read back exactly). Written to OUT.sql.part, then renamed.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: dump.sh DB OUT.sql" >&2; exit 2; }
db=$1 out=$2
command -v sqlite3 > /dev/null || { echo "dump.sh: the sqlite3 command-line tool is not installed (apt-get install sqlite3)" >&2; exit 3; }
[ -f "$db" ] || { echo "dump.sh: '$db' is not a file" >&2; exit 2; }
{
  echo "-- $(basename "$out" .sql): a bkm results database recorded by tests/tuner/data/record.sh;"
  echo "-- load it with: sqlite3 $(basename "$out" .sql).sqlite < $(basename "$out")"
  echo "PRAGMA application_id = $(sqlite3 -readonly "$db" 'PRAGMA application_id');"
  echo "PRAGMA user_version = $(sqlite3 -readonly "$db" 'PRAGMA user_version');"
  sqlite3 -readonly "$db" .dump
} > "$out.part"
mv "$out.part" "$out"
