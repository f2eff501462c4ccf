#!/usr/bin/env bash
# Builds a JRE 17 base image tarball without any container registry (Debian packages only),
# then the Sluice image tarball on top of it with Jib (no Docker daemon needed):
#
#   sudo k8s/image/build-offline-base.sh [workdir]        # needs root for debootstrap
#   -> <workdir>/base-jre17.tar          docker-save style base image (~300 MB)
#   -> server/target/jib-image.tar       the Sluice image (load with `docker load -i` or `skopeo`)
#
# Where a registry is reachable, skip this and run:
#   mvn -B -pl server -am package jib:build -DskipTests -Djib.to.image=<repo>/sluice
set -euo pipefail
cd "$(dirname "$0")/../.."
WORK=${1:-/tmp/sluice-image}
ROOTFS=$WORK/rootfs
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
mkdir -p "$WORK"

command -v debootstrap >/dev/null || apt-get install -y debootstrap
if [ ! -x "$ROOTFS/usr/bin/java" ]; then
  rm -rf "$ROOTFS"
  debootstrap --variant=minbase --include=openjdk-17-jre-headless,ca-certificates bookworm "$ROOTFS" "$MIRROR"
  rm -rf "$ROOTFS"/var/cache/apt/* "$ROOTFS"/var/lib/apt/lists/* "$ROOTFS"/usr/share/doc/* \
         "$ROOTFS"/usr/share/man/* "$ROOTFS"/usr/share/locale/*
fi

LAYER=$WORK/layer1
mkdir -p "$LAYER"
tar -C "$ROOTFS" --exclude=./proc --exclude=./sys --exclude=./dev -cf "$LAYER/layer.tar" .
DIFF_ID=sha256:$(sha256sum "$LAYER/layer.tar" | cut -d' ' -f1)
JAVA_HOME_IN=$(dirname "$(dirname "$(readlink -f "$ROOTFS/usr/bin/java")")" | sed "s#^$ROOTFS##")
cat > "$WORK/config.json" <<JSON
{"architecture":"amd64","os":"linux",
 "config":{"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin","JAVA_HOME=$JAVA_HOME_IN"]},
 "rootfs":{"type":"layers","diff_ids":["$DIFF_ID"]}}
JSON
CFG=$(sha256sum "$WORK/config.json" | cut -d' ' -f1).json
cp "$WORK/config.json" "$WORK/$CFG"
echo "[{\"Config\":\"$CFG\",\"RepoTags\":[\"sluice/base-jre17:local\"],\"Layers\":[\"layer1/layer.tar\"]}]" > "$WORK/manifest.json"
tar -C "$WORK" -cf "$WORK/base-jre17.tar" manifest.json "$CFG" layer1/layer.tar
echo "base image: $WORK/base-jre17.tar"

# -am: proto and the parent come from the reactor, so nothing has to be installed first
mvn -B -ntp -pl server -am package jib:buildTar -DskipTests -Dspotless.check.skip=true \
  -Djib.from.image="tar://$WORK/base-jre17.tar"
ls -la server/target/jib-image.tar
