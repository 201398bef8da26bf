#!/bin/sh
# Debian's chromium as the browser tests launch it (tests/appkit.py): with the omnibox's own web pages
# off. Chromium 156 preloads them for every new window, and each browser context is one: about 0.7 CPU-s
# a context, most of what it costs. Chromium keeps only the last --disable-features switch, so every
# one given (Playwright passes its own list) is merged into one switch with these two.
off=WebUIOmniboxPopup,WebUIOmniboxAimPopup
for arg; do
  shift
  case $arg in
    --disable-features=*) off="$off,${arg#--disable-features=}" ;;
    *) set -- "$@" "$arg" ;;
  esac
done
exec /usr/bin/chromium "--disable-features=$off" "$@"
