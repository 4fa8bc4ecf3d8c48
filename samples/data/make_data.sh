#!/usr/bin/env bash
# Regenerates the real-text samples of this folder from Debian packages (never generated text):
#   kjv_ot.txt    King James Bible, Genesis to 2 Samuel   (bible-kjv-text + bible-kjv, public domain)
#   kjv_nt.txt    King James Bible, Matthew to Revelation (same packages; held out from training)
#   licenses.txt  GPL-2, GPL-3, LGPL-2.1 and GFDL-1.3 as Debian ships them in /usr/share/common-licenses
#                 (verbatim copies, which their own text permits)
# One verse per line, verse numbers and chapter headings removed; ASCII; tokens are bytes (vocab 256).
#   apt-get install bible-kjv bible-kjv-text      then      samples/data/make_data.sh
set -euo pipefail
cd "$(dirname "$0")"
verses() { # book names -> verse text, one verse per line
  for b in "$@"; do bible -l100000 "${b}1:1-${b}150:200"; done |
    sed -n 's/^  *[0-9][0-9]* //p'
}
verses Genesis Exodus Leviticus Numbers Deuteronomy Joshua Judges Ruth 1Samuel 2Samuel > kjv_ot.txt
verses Matthew Mark Luke John Acts Romans 1Corinthians 2Corinthians Galatians Ephesians Philippians \
  Colossians 1Thessalonians 2Thessalonians 1Timothy 2Timothy Titus Philemon Hebrews James 1Peter 2Peter \
  1John 2John 3John Jude Revelation > kjv_nt.txt
L=/usr/share/common-licenses
cat $L/GPL-2 $L/GPL-3 $L/LGPL-2.1 $L/GFDL-1.3 > licenses.txt
sha256sum kjv_ot.txt kjv_nt.txt licenses.txt
