"""Copy the site's front-end assets from node_modules/ into docs/assets/vendor/.

The site loads nothing from another origin: MathJax is installed by `npm ci` from the versions pinned
in package-lock.json, and this script copies the files the pages use next to the other sources, where
mkdocs picks them up. docs/assets/vendor/ is generated (and ignored by git); run this again after
changing package.json.

MathJax 3: the single-file `tex-svg.js` component, plus the directories it loads from on demand
(TeX extensions pulled in by `autoload`, e.g. for `\\boldsymbol`; the menu's accessibility parts).

onnxruntime-web, for the "Try it" page only: the WebAssembly-only build `ort.wasm.min.js` (the global
`ort`), the Emscripten module it imports at run time and its `.wasm` binary (SIMD, which runs on one
thread when the page is not cross-origin isolated). The WebGPU, WebGL and JSPI variants are left out.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NODE_MODULES = ROOT / "node_modules"
VENDOR = ROOT / "docs" / "assets" / "vendor"

# package name -> (source directory inside the package, [files or directories to copy])
ASSETS: dict[str, tuple[str, list[str]]] = {
    "mathjax": ("es5", ["tex-svg.js", "input/tex/extensions", "a11y", "ui", "sre"]),
    "onnxruntime-web": ("dist", ["ort.wasm.min.js", "ort-wasm-simd-threaded.mjs",
                                 "ort-wasm-simd-threaded.wasm"]),
}


def installed_version(package: str) -> str:
    manifest = NODE_MODULES / package / "package.json"
    if not manifest.is_file():
        raise SystemExit(
            f"vendor_assets: {manifest.relative_to(ROOT)} is missing; run `npm ci` first "
            "(scripts/setup.sh does)."
        )
    return json.loads(manifest.read_text(encoding="utf-8"))["version"]


def locked_version(package: str) -> str:
    lock = json.loads((ROOT / "package-lock.json").read_text(encoding="utf-8"))
    return lock["packages"][f"node_modules/{package}"]["version"]


def main() -> int:
    for package, (subdir, entries) in ASSETS.items():
        version = installed_version(package)
        if version != locked_version(package):
            raise SystemExit(
                f"vendor_assets: node_modules has {package} {version} but package-lock.json pins "
                f"{locked_version(package)}; run `npm ci`."
            )
        target = VENDOR / package
        if target.exists():
            shutil.rmtree(target)
        for entry in entries:
            source = NODE_MODULES / package / subdir / entry
            dest = target / entry
            dest.parent.mkdir(parents=True, exist_ok=True)
            if source.is_dir():
                shutil.copytree(source, dest)
            elif source.is_file():
                shutil.copy2(source, dest)
            else:
                raise SystemExit(f"vendor_assets: {source.relative_to(ROOT)} not found in "
                                 f"{package} {version}")
        (target / "VERSION").write_text(f"{package} {version}\n", encoding="utf-8")
        print(f"vendored {package} {version} into {target.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
