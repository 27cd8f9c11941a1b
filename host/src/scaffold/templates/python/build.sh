#!/usr/bin/env bash
# Builds {{name}}.wasm from app.py with componentize-py, which bundles a
# CPython interpreter and snapshots it after importing the app. Installs
# componentize-py {{componentize_py}} from PyPI (pip) when it is missing.
{{helpers}}

version={{componentize_py}}
need python3 "install Python 3 (with pip)"
installed=$(python3 -c 'import importlib.metadata as m
try: print(m.version("componentize-py"))
except m.PackageNotFoundError: pass')
if [[ "$installed" != "$version" ]]; then
    say "installing componentize-py $version from PyPI"
    PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --disable-pip-version-check \
        "componentize-py==$version"
fi
need componentize-py "pip installed componentize-py but its scripts folder is not on PATH"

# Built from a scratch copy: the interpreter writes __pycache__ next to the sources.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir "$scratch/src"
cp "$here/app.py" "$scratch/src/"
componentize-py -d "$here/wit" -w command-plugin componentize app \
    -p "$scratch/src" -o "$scratch/{{name}}.wasm" >/dev/null
install_component "$scratch/{{name}}.wasm"
