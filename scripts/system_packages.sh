#!/usr/bin/env bash
# The programs the test suite drives for real, from Debian's packages: tmux (the picker in a terminal), zsh and
# fish (the `sessdex init` and completion tests, beside bash), PostgreSQL (a real server for the shared catalog),
# chromium and chromium-driver (exported pages and `sessdex serve` in a headless browser). Sourced by
# scripts/test; installs only what is missing, with apt-get as root or through sudo. The PostgreSQL and browser tests
# fail (never skip) without their program, so a warning here explains a red run.
set -euo pipefail
sessdex_missing_packages=()
for pair in tmux:tmux zsh:zsh fish:fish chromium:chromium chromedriver:chromium-driver; do
  command -v "${pair%%:*}" >/dev/null 2>&1 || sessdex_missing_packages+=("${pair##*:}")
done
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || sessdex_missing_packages+=(postgresql)
if [ ${#sessdex_missing_packages[@]} -gt 0 ]; then
  sessdex_apt=(apt-get)
  [ "$(id -u)" -eq 0 ] || sessdex_apt=(sudo -n apt-get)
  echo "installing ${sessdex_missing_packages[*]} (Debian packages the tests use)" >&2
  { "${sessdex_apt[@]}" update -qq && DEBIAN_FRONTEND=noninteractive "${sessdex_apt[@]}" install -y -qq \
      "${sessdex_missing_packages[@]}"; } >/dev/null 2>&1 \
    || echo "warning: could not install ${sessdex_missing_packages[*]}; the tests that need them will fail" >&2
fi
