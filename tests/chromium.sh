#!/bin/sh
# Debian's chromium as the browser tests launch it (tests/appkit.py): with the omnibox's own web pages
# off. Chromium 156 preloads them for every new window, and each browser context is one: about 0.7 CPU-s
# a context, most of what it costs. Chromium keeps only the last --disable-features switch, so the two
# features join the list Playwright passes instead of replacing it.
off=WebUIOmniboxPopup,WebUIOmniboxAimPopup
for arg; do
  shift
  case $arg in --disable-features=*) arg="$arg,$off" off= ;; esac
  set -- "$@" "$arg"
done
exec /usr/bin/chromium ${off:+"--disable-features=$off"} "$@"
