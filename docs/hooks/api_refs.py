"""Build hook: a cross-reference to an object of the package goes to its API reference entry.

A page may render an object of the package a second time (`::: vanilla_transformer.x.y` in an
article, to show its docstring and source there). mkdocs-autorefs then knows two places for the
object's identifier; the hook keeps only the API reference's, so every cross-reference to the
object keeps going to its entry under `api/`.
"""

from __future__ import annotations

import logging

from jinja2 import Environment
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.plugins import event_priority
from mkdocs.structure.files import Files

log = logging.getLogger("mkdocs.hooks.api_refs")

API_PREFIX = "api/"


@event_priority(0)  # before autorefs applies the cross-references (its on_env runs at -50)
def on_env(env: Environment, config: MkDocsConfig, files: Files) -> Environment:
    autorefs = config.plugins.get("autorefs")
    url_map = getattr(autorefs, "_primary_url_map", None)
    if not isinstance(url_map, dict):
        log.warning("api_refs hook: mkdocs-autorefs has changed; API entries may not be preferred")
        return env
    for identifier, urls in url_map.items():
        if len(urls) > 1:
            api_urls = [url for url in urls if url.startswith(API_PREFIX)]
            if api_urls:
                url_map[identifier] = api_urls
    return env
