#!/usr/bin/env bash
# Fetch what tests/runners needs into the cache (default ~/.cache/mintdim-beam, or
# $MINTDIM_BEAM_CACHE); the tests themselves never download, they skip without it.
#
#   tools/fetch_runners.sh [prism] [flink] [spark] [flink-dist] [spark-dist]   (default: prism flink spark)
#
# * prism: Beam's Prism runner, built from Beam's Go module of the installed apache-beam
#   version (needs Go): $CACHE/prism-<beam>/prism
# * flink: Beam's Flink job server jar of that Beam version, the newest Flink version
#   Maven Central serves it for (needs mvn): $CACHE/jars/beam-runners-flink-<f>-job-server-<beam>.jar
# * spark: Beam's Spark 3 job server jar (needs mvn): $CACHE/jars/beam-runners-spark-3-job-server-<beam>.jar
# * flink-dist: a Flink distribution for a local cluster (bin/ scripts, lib/ jars), unpacked
#   from PyPI's apache-flink-libraries and apache-flink wheels: $CACHE/flink-<version>/
# * spark-dist: a Spark distribution for a standalone cluster (bin/, sbin/, jars/), unpacked
#   from PyPI's pyspark sdist: $CACHE/spark-<version>/
#
# A piece that cannot be had is reported and skipped; the exit status is 0 unless
# --strict is given, so CI goes on and the tests that need the piece skip.
# PYTHON (default: python) is the interpreter whose apache-beam version is matched.
set -uo pipefail

PYTHON=${PYTHON:-python}
CACHE=${MINTDIM_BEAM_CACHE:-$HOME/.cache/mintdim-beam}
FLINK_VERSIONS=${FLINK_VERSIONS:-"2.2 2.1 2.0 1.20 1.19"}
FLINK_DIST_VERSION=${FLINK_DIST_VERSION:-1.20.3}
SPARK_DIST_VERSION=${SPARK_DIST_VERSION:-3.5.9}
strict=0
wanted=()
for arg in "$@"; do
  case "$arg" in
    --strict) strict=1 ;;
    prism|flink|spark|flink-dist|spark-dist) wanted+=("$arg") ;;
    *) echo "usage: $0 [--strict] [prism] [flink] [spark] [flink-dist] [spark-dist]" >&2; exit 64 ;;
  esac
done
[ ${#wanted[@]} -eq 0 ] && wanted=(prism flink spark)

BEAM=$("$PYTHON" -c 'import apache_beam; print(apache_beam.__version__)') || { echo "no apache-beam in $PYTHON" >&2; exit 2; }
mkdir -p "$CACHE/jars"
missing=0
say() { echo "[fetch_runners] $*"; }

fetch_prism() {
  local bin="$CACHE/prism-$BEAM/prism"
  if [ -x "$bin" ]; then say "prism: cached $bin"; return 0; fi
  local go; go=$(command -v go || echo /usr/local/go/bin/go)
  if [ ! -x "$go" ]; then say "prism: no Go toolchain, not built"; return 1; fi
  say "prism: go install github.com/apache/beam/sdks/v2/go/cmd/prism@v$BEAM"
  if GOBIN="$CACHE/prism-$BEAM" GOFLAGS=-mod=mod "$go" install "github.com/apache/beam/sdks/v2/go/cmd/prism@v$BEAM"; then
    say "prism: built $bin"
  else
    say "prism: go install failed"; return 1
  fi
}

# mvn_jar ARTIFACT DEST: one Maven artifact (no dependencies) copied from the local
# repository (MAVEN_REPO, default ~/.m2/repository) to DEST.
mvn_jar() {
  local artifact=$1 dest=$2 repo=${MAVEN_REPO:-$HOME/.m2/repository}
  if mvn -B -q dependency:get -Dartifact="org.apache.beam:$artifact:$BEAM" -Dtransitive=false >/dev/null 2>&1; then
    cp "$repo/org/apache/beam/$artifact/$BEAM/$artifact-$BEAM.jar" "$dest.tmp" && mv "$dest.tmp" "$dest"
    return 0
  fi
  return 1
}

fetch_flink() {
  local f jar
  for f in $FLINK_VERSIONS; do
    jar="$CACHE/jars/beam-runners-flink-$f-job-server-$BEAM.jar"
    if [ -f "$jar" ]; then say "flink: cached $jar"; return 0; fi
  done
  if ! command -v mvn >/dev/null; then say "flink: no mvn, not fetched"; return 1; fi
  for f in $FLINK_VERSIONS; do
    jar="$CACHE/jars/beam-runners-flink-$f-job-server-$BEAM.jar"
    if mvn_jar "beam-runners-flink-$f-job-server" "$jar"; then say "flink: fetched $jar"; return 0; fi
    say "flink: org.apache.beam:beam-runners-flink-$f-job-server:$BEAM could not be fetched (not served, or Maven Central out of reach)"
  done
  return 1
}

fetch_spark() {
  local jar="$CACHE/jars/beam-runners-spark-3-job-server-$BEAM.jar"
  if [ -f "$jar" ]; then say "spark: cached $jar"; return 0; fi
  if ! command -v mvn >/dev/null; then say "spark: no mvn, not fetched"; return 1; fi
  if mvn_jar beam-runners-spark-3-job-server "$jar"; then say "spark: fetched $jar"; return 0; fi
  say "spark: org.apache.beam:beam-runners-spark-3-job-server:$BEAM could not be fetched (not served, or Maven Central out of reach)"
  return 1
}

fetch_flink_dist() {
  # PyPI's apache-flink wheel carries FLINK_HOME's bin/ and conf/ (pyflink/bin, pyflink/conf),
  # the apache-flink-libraries sdist its jars (deps/lib, deps/opt, deps/plugins, deps/bin).
  local home="$CACHE/flink-$FLINK_DIST_VERSION" tmp whl lib d
  if [ -x "$home/bin/jobmanager.sh" ]; then say "flink-dist: cached $home"; return 0; fi
  tmp=$(mktemp -d)
  "$PYTHON" -m pip download -q --no-deps --only-binary :all: -d "$tmp" "apache-flink==$FLINK_DIST_VERSION" >/dev/null 2>&1
  # pip prepares the sdist's metadata too, which may fail once the archive is there: the archive is enough.
  "$PYTHON" -m pip download -q --no-deps -d "$tmp" "apache-flink-libraries==$FLINK_DIST_VERSION" >/dev/null 2>&1
  whl=$(ls "$tmp"/apache_flink-*.whl 2>/dev/null | head -1)
  lib=$(ls "$tmp"/apache?flink?libraries-*.tar.gz 2>/dev/null | head -1)
  if [ -z "$whl" ] || [ -z "$lib" ]; then
    say "flink-dist: pip could not download apache-flink (wheel) and apache-flink-libraries $FLINK_DIST_VERSION"
    rm -rf "$tmp"; return 1
  fi
  mkdir -p "$tmp/w" "$tmp/l" "$home.tmp"
  "$PYTHON" -m zipfile -e "$whl" "$tmp/w" && tar -xzf "$lib" -C "$tmp/l"
  cp -r "$tmp/w/pyflink/bin" "$tmp/w/pyflink/conf" "$home.tmp/"
  for d in lib opt plugins; do cp -r "$tmp"/l/*/deps/$d "$home.tmp/" 2>/dev/null; done
  cp "$tmp"/l/*/deps/bin/*.jar "$home.tmp/bin/" 2>/dev/null
  mkdir -p "$home.tmp/log"
  chmod +x "$home.tmp"/bin/*
  rm -rf "$tmp"
  if [ -x "$home.tmp/bin/jobmanager.sh" ] && ls "$home.tmp"/lib/flink-dist*.jar >/dev/null 2>&1; then
    rm -rf "$home" && mv "$home.tmp" "$home" && say "flink-dist: unpacked $home"
  else
    say "flink-dist: the $FLINK_DIST_VERSION packages hold no bin/jobmanager.sh and lib/flink-dist"; rm -rf "$home.tmp"
    return 1
  fi
}

fetch_spark_dist() {
  # PyPI's pyspark sdist carries SPARK_HOME as deps/{bin,sbin,jars,conf?}.
  local home="$CACHE/spark-$SPARK_DIST_VERSION" tmp src d
  if [ -x "$home/bin/spark-class" ]; then say "spark-dist: cached $home"; return 0; fi
  tmp=$(mktemp -d)
  # pip prepares the sdist's metadata too, which may fail once the archive is there: the archive is enough.
  "$PYTHON" -m pip download -q --no-deps -d "$tmp" "pyspark==$SPARK_DIST_VERSION" >/dev/null 2>&1
  src=$(ls "$tmp"/pyspark-*.tar.gz 2>/dev/null | head -1)
  if [ -z "$src" ]; then say "spark-dist: pip could not download pyspark $SPARK_DIST_VERSION"; rm -rf "$tmp"; return 1; fi
  mkdir -p "$tmp/x" "$home.tmp"
  tar -xzf "$src" -C "$tmp/x" --wildcards '*/deps/bin/*' '*/deps/sbin/*' '*/deps/jars/*' '*/deps/conf/*' 2>/dev/null \
    || tar -xzf "$src" -C "$tmp/x"
  for d in bin sbin jars conf; do cp -r "$tmp"/x/*/deps/$d "$home.tmp/" 2>/dev/null; done
  chmod +x "$home.tmp"/bin/* "$home.tmp"/sbin/* 2>/dev/null
  rm -rf "$tmp"
  if [ -x "$home.tmp/bin/spark-class" ] && [ -d "$home.tmp/jars" ]; then
    rm -rf "$home" && mv "$home.tmp" "$home" && say "spark-dist: unpacked $home"
  else
    say "spark-dist: pyspark $SPARK_DIST_VERSION holds no bin/spark-class and jars/"; rm -rf "$home.tmp"
    return 1
  fi
}

for piece in "${wanted[@]}"; do
  "fetch_${piece//-/_}" || missing=$((missing + 1))
done
say "apache-beam $BEAM; cache $CACHE; $missing piece(s) missing"
[ "$strict" = 1 ] && [ "$missing" -gt 0 ] && exit 1
exit 0
