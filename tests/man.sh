#!/bin/sh
# man.sh - every man page renders without a warning from groff and man.
#   make check:         tests/man.sh              (the pages in GA_MAN_PAGES, built in GA_BUILD)
#   make installcheck:  tests/man.sh --installed MANDIR PAGE...
#                       (each PAGE, e.g. man/gpuaccel-tune.5, must be in MANDIR/man5/)
# Prints a SKIP line and exits 77 when neither groff nor man is there.
set -u
installed=
if [ "${1:-}" = --installed ]; then
    installed=${2:?usage: man.sh --installed MANDIR PAGE...}
    shift 2
    pages=$*
else
    pages=${GA_MAN_PAGES:?GA_MAN_PAGES: the pages (make check sets it)}
fi
have_groff=$(command -v groff || true)
have_man=$(command -v man || true)
if [ -z "$have_groff" ] && [ -z "$have_man" ]; then
    echo "SKIP: neither groff nor man is installed: man pages not rendered"
    exit 77
fi
[ -n "$have_groff" ] || echo "note: no groff; rendering with man only"
[ -n "$have_man" ] || echo "note: no man; rendering with groff only"

# man in a UTF-8 locale when there is one (what most readers see), else C
loc=C
locale -a 2>/dev/null | grep -qix 'c\.utf-\?8' && loc=C.UTF-8
fail=0
n=0
for page in $pages; do
    name=${page##*/}
    if [ -n "$installed" ]; then
        file=$installed/man${name##*.}/$name
        [ -f "$file" ] || { echo "FAIL: $name is not installed in $installed/man${name##*.}"; fail=1; continue; }
    else
        file=${GA_BUILD:-.}/$page
        [ -f "$file" ] || { echo "FAIL: $file is not built"; fail=1; continue; }
    fi
    # the first line names the page: .TH NAME SECTION, the section its file's
    sect=$(sed -n 's/^\.TH [^ ]* \([0-9]\) .*/\1/p' "$file" | head -1)
    [ "$sect" = "${name##*.}" ] || { echo "FAIL: $file: .TH says section '$sect'"; fail=1; }
    if [ -n "$have_groff" ]; then
        out=$(groff -man -ww -z "$file" 2>&1)
        [ -z "$out" ] || { echo "FAIL: groff -man -ww: $file:"; echo "$out"; fail=1; }
    fi
    if [ -n "$have_man" ]; then
        out=$(LC_ALL=$loc MANWIDTH=80 man --warnings -l "$file" 2>&1 >/dev/null)
        [ -z "$out" ] || { echo "FAIL: man --warnings: $file:"; echo "$out"; fail=1; }
        text=$(LC_ALL=$loc MANWIDTH=80 man -l "$file" 2>/dev/null)
        [ -n "$text" ] || { echo "FAIL: man -l $file rendered nothing"; fail=1; }
    fi
    n=$((n + 1))
done
[ "$fail" -eq 0 ] && echo "ok: $n man pages render without warnings${installed:+ (installed in $installed)}"
exit "$fail"
