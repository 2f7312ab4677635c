#!/bin/sh
# Fetch the Debian archive indexes debian-facets is built from, and check them against the snapshot
# recorded in data/collections/debian-facets/README.md:
#   InRelease, Packages and Translation-en of bookworm main (amd64), the Debtags vocabulary of `debtags`.
#
#   workflow/scripts/fetch_debian_indexes.sh OUT_DIR       (then: srdiv collection debian-facets --indexes OUT_DIR ...)
#
# Needs a Debian machine whose apt sources hold bookworm main, and root (apt-get update). Long
# descriptions are only downloaded with Acquire::Languages=en (many installations turn translations
# off). apt keeps its lists compressed in its own format; apt-helper writes them out plain. When the
# archive has moved on to a later point release, the checksums differ: point apt at Debian's snapshot
# archive for the date in the data card and run this again.
set -eu
out=${1:?usage: $0 OUT_DIR}
PACKAGES_SHA256=515e692f2c4121c6fcec444ef100cc18f79a991910615f3a88c8b7becfc94d2f
TRANSLATION_SHA256=62f59c3cdca9786e4f7adf9002f9f5729a684adcb4667e58e448dec9b5a46c7f
VOCABULARY_SHA256=1bb8d6e8f8aafeb9d14f99ccb45e00ed3d4a2879ceedc736e08dcdea5b3e8c89
DEBTAGS_VERSION=2.1.5

apt-get update -o Acquire::Languages=en
lists=$(apt-config shell L Dir::State::lists/d | sed "s/^L='\(.*\)'$/\1/")
one() {  # the single list file of bookworm (not bookworm-updates or -security) matching $1
    set -- "$lists"/*_dists_bookworm_$1
    [ -e "$1" ] || { echo "no $1 in apt's lists: is bookworm main in the apt sources?" >&2; exit 1; }
    echo "$1"
}
mkdir -p "$out"
cp "$(one InRelease)" "$out/InRelease"
/usr/lib/apt/apt-helper cat-file "$(one 'main_binary-amd64_Packages*')" > "$out/Packages"
/usr/lib/apt/apt-helper cat-file "$(one 'main_i18n_Translation-en*')" > "$out/Translation-en"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && apt-get download "debtags=$DEBTAGS_VERSION" && dpkg-deb -x debtags_*.deb x)
cp "$tmp/x/usr/share/debtags/vocabulary" "$out/vocabulary"

cd "$out"
printf '%s  %s\n' "$PACKAGES_SHA256" Packages "$TRANSLATION_SHA256" Translation-en \
    "$VOCABULARY_SHA256" vocabulary | sha256sum -c -
