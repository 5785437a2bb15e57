#!/usr/bin/env bash
# Resolve the JVM jar sets declared in infra/jars/pom.xml into the local jar cache, once.
# Later runs find a stamp per set and touch no network. Usage: infra/jars/fetch.sh [set ...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${STREAMLAKE_JAR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/streaming-lakehouse/jars}
sets=("$@"); [ ${#sets[@]} -gt 0 ] || sets=(kafka iceberg-rest spark)
# A set is fetched again when its own profile or the shared part of the pom (versions,
# repositories) changes; adding or editing another set's profile leaves it alone.
set_hash() {
  { sed -n '1,/<profiles>/p' "$here/pom.xml"
    awk -v id="<id>$1</id>" '/<profile>/ {block = ""; inside = 1} inside {block = block $0 "\n"}
                             /<\/profile>/ {if (index(block, id)) printf "%s", block; inside = 0}' "$here/pom.xml"
  } | sha256sum | cut -c1-16
}
mkdir -p "$cache"
# One fetch at a time: parallel set-ups (two shells, a test run and a bench) wait for each other.
exec 9>"$cache/.fetch.lock"; flock 9
for set in "${sets[@]}"; do
  grep -q "<id>$set</id>" "$here/pom.xml" || { echo "fetch.sh: unknown jar set '$set' (see the profiles in $here/pom.xml)" >&2; exit 2; }
  stamp="$cache/$set/.complete-$(set_hash "$set")"
  if [ -f "$stamp" ]; then continue; fi
  command -v mvn >/dev/null || { echo "fetch.sh: Maven (mvn) is required to fetch the '$set' jars once" >&2; exit 1; }
  echo "fetching jar set '$set' into $cache/$set (once; later runs are offline)" >&2
  rm -rf "$cache/$set.partial"
  log="$cache/$set.fetch.log"
  if ! mvn -q -B -f "$here/pom.xml" -Dmaven.repo.local="$cache/m2" -P "$set" \
      dependency:copy-dependencies -DoutputDirectory="$cache/$set.partial" -DincludeScope=runtime >"$log" 2>&1; then
    cat "$log" >&2; echo "fetch.sh: resolving jar set '$set' failed (log: $log)" >&2; exit 1
  fi
  # Swap the finished set in whole, so a killed fetch never leaves a half set that looks complete.
  rm -rf "$cache/$set"; mv "$cache/$set.partial" "$cache/$set"; touch "$stamp"
done
