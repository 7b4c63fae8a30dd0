"""Fixtures shared by the browser tests of the built site: the site, a server and a browser.

scripts/test.sh builds the site into site/ (`mkdocs build --strict`) before running pytest. These
fixtures serve that directory on 127.0.0.1 and open it in Debian's Chromium through Playwright;
every request goes through a recorder that aborts and reports anything sent to another origin.
VANILLA_TRANSFORMER_SITE_DIR points them at another build directory.
"""

from __future__ import annotations

import functools
import http.server
import os
import re
import sys
import threading
from pathlib import Path
from urllib.parse import urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[2]
SITE = Path(os.environ.get("VANILLA_TRANSFORMER_SITE_DIR", ROOT / "site")).resolve()
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--headless=new",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
TIMEOUT_MS = 30_000

# --------------------------------------------------------------------------------------------- #
# The site, a server and a browser, shared by every browser test                               #
# --------------------------------------------------------------------------------------------- #


@pytest.fixture(scope="module")
def site() -> Path:
    if not (SITE / "index.html").is_file():
        pytest.fail(
            f"the built site is missing: {SITE / 'index.html'} does not exist. Build it first with "
            "`.venv/bin/python -m mkdocs build --strict --site-dir site` (scripts/test.sh does).",
            pytrace=False,
        )
    return SITE


class _SiteHandler(http.server.SimpleHTTPRequestHandler):
    """Serve the built files; sitemap.xml names the address the site is served at.

    The build writes `site_url` (http://127.0.0.1:8000/ unless SITE_URL says otherwise) into
    sitemap.xml, and Material's instant navigation only takes over links to the pages listed
    there. Serving the sitemap with the test server's own address is what a deployment at
    `site_url` looks like; the other files are served as built.
    """

    def do_GET(self):
        if urlsplit(self.path).path == "/sitemap.xml":
            sitemap = Path(self.directory, "sitemap.xml").read_text(encoding="utf-8")
            locations = re.findall(r"<loc>([^<]+)</loc>", sitemap)
            home = min(locations, key=len) if locations else None  # the site_url itself
            if home:
                sitemap = sitemap.replace(f"<loc>{home}", f"<loc>{self.server.origin}/")
            body = sitemap.encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        super().do_GET()

    def log_message(self, format, *args):  # noqa: A002 - the base class's signature
        pass


class _QuietServer(http.server.ThreadingHTTPServer):
    """A server that does not print a traceback when the browser drops a connection.

    A test that moves on while a large file (the translator's WebAssembly) is still downloading
    closes the connection; that is the browser's choice, not a fault of the site.
    """

    daemon_threads = True

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


@pytest.fixture(scope="module")
def origin(site: Path):
    """Serve the site with http.server on 127.0.0.1 at a free port, in a background thread."""
    handler = functools.partial(_SiteHandler, directory=str(site))
    server = _QuietServer(("127.0.0.1", 0), handler)
    server.origin = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.origin
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).is_file():
        pytest.fail(f"{CHROMIUM} not found: install it with `apt-get install -y chromium`", pytrace=False)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


class Recorder:
    """What went wrong on a page: console errors, page errors, outside or failed requests."""

    def __init__(self, origin: str) -> None:
        self.origin = origin
        self.blocked: list[str] = []
        self.errors: list[str] = []

    def route(self, route) -> None:
        url = route.request.url
        if url.startswith(self.origin + "/") or url == self.origin:
            route.continue_()
        else:
            self.blocked.append(url)
            route.abort("blockedbyclient")

    def console(self, message) -> None:
        if message.type == "error":
            self.errors.append(f"console error: {message.text}")

    def page_error(self, error) -> None:
        self.errors.append(f"page error: {error}")

    def response(self, response) -> None:
        if response.status >= 400:
            self.errors.append(f"HTTP {response.status} for {response.url}")

    def request_failed(self, request) -> None:
        # ERR_ABORTED: cancelled because the test moved on to the next page, not a fault of the site.
        if request.url.startswith(self.origin) and "ERR_ABORTED" not in (request.failure or ""):
            self.errors.append(f"request failed: {request.url} ({request.failure})")

    def take(self) -> tuple[list[str], list[str]]:
        blocked, errors = self.blocked, self.errors
        self.blocked, self.errors = [], []
        return blocked, errors


@pytest.fixture(scope="module")
def tab(browser, origin):
    """One page of a browser context whose every request goes through the recorder."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, color_scheme="light")
    recorder = Recorder(origin)
    context.route("**/*", recorder.route)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.on("console", recorder.console)
    page.on("pageerror", recorder.page_error)
    page.on("response", recorder.response)
    page.on("requestfailed", recorder.request_failed)
    page.recorder = recorder
    try:
        yield page
    finally:
        context.close()


# --------------------------------------------------------------------------------------------- #
# PyTorch's side of the live model's trace (docs/javascripts/live_model.js, model.trace)       #
# --------------------------------------------------------------------------------------------- #


def torch_trace(model, src_ids: list[int], ys: list[int]) -> dict:
    """Every intermediate value of `model` on `src_ids` and the prefix `ys`, in the shape of
    the live model's `trace` (its header comment), as tensors: forward hooks on the package's
    own modules catch them, and `record_attention` the maps."""
    import torch

    from vanilla_transformer.analysis.switches import record_attention
    from vanilla_transformer.model.masks import subsequent_mask

    seen: dict[str, torch.Tensor] = {}
    hooks = []

    def watch(module, name: str, what: str = "output") -> None:
        def hook(_module, args, output):
            seen[name] = (args[0] if what == "input" else output)[0].detach().clone()
        hooks.append(module.register_forward_hook(hook))

    h = model.config.h
    sides = {"source": (model.src_embed, model.encoder, ["self", "ff"]),
             "target": (model.tgt_embed, model.decoder, ["self", "cross", "ff"])}
    for side, (embed, stack, kinds) in sides.items():
        watch(embed[0], f"{side}.embedding")
        watch(embed[1], f"{side}.sum")
        for i, layer in enumerate(stack.layers):
            attns = {"self": layer.self_attn, "cross": getattr(layer, "src_attn", None)}
            for j, kind in enumerate(kinds):
                watch(layer.sublayer[j].norm, f"{side}.{i}.{kind}.residual", "input")
                watch(layer.sublayer[j].norm, f"{side}.{i}.{kind}.norm")
                if kind == "ff":
                    watch(layer.feed_forward.w_1, f"{side}.{i}.ff.hidden")
                    watch(layer.feed_forward.w_2, f"{side}.{i}.ff.out")
                    continue
                for k, part in enumerate("qkv"):
                    watch(attns[kind].linears[k], f"{side}.{i}.{kind}.{part}")
                watch(attns[kind].linears[3], f"{side}.{i}.{kind}.concat", "input")
                watch(attns[kind].linears[3], f"{side}.{i}.{kind}.out")
    try:
        with torch.no_grad(), record_attention(model) as maps:
            memory = model.encode(torch.tensor([src_ids]), None)
            out = model.decode(memory, None, torch.tensor([ys]), subsequent_mask(len(ys)))
            logits = model.generator.proj(out[0, -1])
    finally:
        for handle in hooks:
            handle.remove()

    def attention(side: str, i: int, kind: str) -> dict:
        name = f"{side}.{i}.{kind}"
        values = {field: seen[f"{name}.{field}"] for field in ("concat", "out", "residual",
                                                               "norm")}
        for part in "qkv":
            flat = seen[f"{name}.{part}"]
            values[part] = flat.view(flat.size(0), h, -1).transpose(0, 1)  # (h, len, d_k)
        stack = {"source": "encoder-self", "target": "decoder-self"}[side]
        scores, weights = maps[stack if kind == "self" else "cross", i]
        return {**values, "scores": scores[0], "weights": weights[0]}

    def layers(side: str) -> list[dict]:
        _, stack, kinds = sides[side]
        return [{kind: attention(side, i, kind) if kind != "ff" else {
            "hidden": seen[f"{side}.{i}.ff.hidden"].relu(), "out": seen[f"{side}.{i}.ff.out"],
            "residual": seen[f"{side}.{i}.ff.residual"], "norm": seen[f"{side}.{i}.ff.norm"]}
            for kind in kinds} for i in range(len(stack.layers))]

    def side_values(side: str, ids: list[int]) -> dict:
        embed = sides[side][0]
        return {"ids": torch.tensor(ids), "embedding": seen[f"{side}.embedding"],
                "positions": embed[1].pe[0, :len(ids)], "sum": seen[f"{side}.sum"],
                "layers": layers(side)}

    return {"source": side_values("source", src_ids), "memory": memory[0],
            "target": side_values("target", ys), "logits": logits,
            "logProbs": logits.log_softmax(-1)}



@pytest.fixture(scope="session")
def pytorch_trace():
    """`torch_trace`, for the tests that compare the live model's values with PyTorch's."""
    return torch_trace
