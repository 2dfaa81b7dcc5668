#!/usr/bin/env bash
# Regenerates DejaVuSans-subset.ttf, the font `microrl` draws its plots with
# (embedded with include_bytes!, so plots need no system fonts).
#
# Source: DejaVuSans.ttf from Debian's fonts-dejavu-core package (2.37-6),
# licence in DejaVuSans-LICENSE.txt. Subset: printable ASCII plus the few
# symbols the plots print (minus sign, plus-minus, >=, middle dot, en dash),
# which keeps the embedded font at about 20 KB instead of 760 KB.
#
# Needs apt-get and Python 3 (fonttools is installed into a throw-away venv):
#   bash std-harness/assets/make_font.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
apt-get download fonts-dejavu-core=2.37-6
dpkg-deb -x fonts-dejavu-core_2.37-6_all.deb pkg
python3 -m venv venv
venv/bin/pip install -q fonttools==4.68.0
venv/bin/pyftsubset pkg/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf \
  --unicodes="U+0020-007E,U+00B1,U+00B7,U+2013,U+2212,U+2265" \
  --layout-features='kern' --no-hinting --desubroutinize \
  --output-file="$here/DejaVuSans-subset.ttf"
ls -l "$here/DejaVuSans-subset.ttf"
