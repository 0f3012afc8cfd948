"""A prebuilt index: one pool's index cache in a folder of its own, with a manifest it is checked by before use.

``skill-assets index --pool DIR --out INDEX`` indexes the pool as the router would, with INDEX as the engine's
cache folder (the same sealed embedding shards, BM25 folder and backend verdicts as any index cache:
``document_cache``, ``lexical``), then writes ``MANIFEST_FILE`` beside them: which encoders made the vectors
(each one's cache key: weights, backend and CPU, how much of each document it reads) and a hash of each skill.
``route`` / ``serve --index INDEX`` route with INDEX as their cache, so a skill as built is read from it and
only a changed or new skill is encoded (into INDEX: the next start from it encodes nothing). That much the
content-keyed cache does by itself; the manifest adds the check before any encoding. An index made by other
encoders would be encoded again whole, minutes for a large pool, without a word: it is refused in one line
naming the encoder that differs. And one line says how the pool differs from the one indexed.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from skill_assets.lib.common.cache_files import sealed_json, unseal_json, write_text_atomic
from skill_assets.lib.models.encoder_backends import backend_key
from skill_assets.lib.common.hashing import digest
from skill_assets.lib.retrieval.engine import Engine
from skill_assets.lib.retrieval.pools import Skill, some_ids

MANIFEST_FILE = "skill_assets_index.json"
#: v2: the multilingual vectors hold each skill's description alone beside its document (``multilingual``); a v1 index
#: has none, and routing from it would encode every description
FORMAT = "skill-assets-prebuilt-index-v2"


class PrebuiltIndexError(ValueError):
    """An index that cannot serve this router as given; the message says why and what to do, in one line."""


def skill_hash(skill: Skill) -> str:
    """What every document of a skill is made of (name, description, body), exactly: an edit anywhere in it,
    whitespace included, is an edit some encoder reads."""
    return digest("\x1f".join((skill.name, skill.description, skill.body)))


def encoders(engine: Engine) -> dict[str, dict[str, str]]:
    """``{signal: {"fingerprint", "made_by"}}`` for each encoder whose document vectors ``engine`` indexes: the key
    its vectors are cached under, and the same in words for the line that refuses an index made by another."""
    out = {}
    for signal in engine.indexes.encoded_signals():
        if signal == "dense":
            dense = engine.dense
            read = f", documents read to {dense.document_tokens} tokens" if dense.document_tokens else ""
            out[signal] = {"fingerprint": dense.fingerprint,
                           "made_by": f"{dense.model_path} (backend {backend_key(dense.backend)}{read})"}
        else:  # the multilingual vectors' cache key is the model's; what they read of a skill is the engine's caps
            caps = engine.multilingual_caps
            out[signal] = {"fingerprint": digest(f"{engine.multilingual.fingerprint}|{caps}"),
                           "made_by": f"{engine.multilingual.model} (each skill's document, description read to "
                                      f"{caps.description_chars} characters and body to {caps.body_chars}, and its "
                                      "description alone)"}
    return out


def write_manifest(engine: Engine, skills: Sequence[Skill], roots: Sequence[str | Path], directory: Path) -> None:
    """Record what ``engine`` indexed into ``directory`` (its cache folder): written last, in one rename, so an
    interrupted build leaves the previous manifest or none."""
    write_text_atomic(directory / MANIFEST_FILE, sealed_json({
        "format": FORMAT, "built": datetime.now(UTC).isoformat(timespec="seconds"),
        "roots": [str(r) for r in roots], "encoders": encoders(engine),
        "skills": {s.id: skill_hash(s) for s in skills}}))


@dataclass(frozen=True)
class IndexCheck:
    """How the pool differs from the one a prebuilt index holds (skill ids)."""

    directory: Path
    built: str
    as_built: int
    changed: list[str]
    new: list[str]
    removed: list[str]

    def __str__(self) -> str:
        head = f"prebuilt index {self.directory} (built {self.built})"
        if not (self.changed or self.new or self.removed):
            return f"{head} holds the pool as it is ({self.as_built} skills): nothing to encode"
        parts = [f"{len(ids)} {what} ({some_ids(ids)})" for what, ids in
                 (("changed", self.changed), ("new", self.new), ("removed", self.removed)) if ids]
        return (f"{head}: {self.as_built} skills as built, {', '.join(parts)} since; only the changed and new "
                "skills are encoded")


def check_index(engine: Engine, skills: Sequence[Skill], directory: Path) -> IndexCheck:
    """Compare the prebuilt index in ``directory`` with ``engine``'s encoders and the pool ``skills``, before any
    encoding; PrebuiltIndexError if it is no index, or one made by other encoders (or without one ``engine``
    needs)."""
    rebuild = f"build one with: skill-assets index --pool DIR --out {directory}"
    if not directory.is_dir():
        what = "is not a folder" if directory.exists() else "does not exist"
        raise PrebuiltIndexError(f"prebuilt index {directory} {what}; {rebuild}")
    try:
        manifest = unseal_json((directory / MANIFEST_FILE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PrebuiltIndexError(f"{directory} is not a prebuilt index (no {MANIFEST_FILE}); {rebuild}") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise PrebuiltIndexError(f"prebuilt index {directory}: {MANIFEST_FILE} cannot be read ({exc}); "
                                 f"{rebuild}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise PrebuiltIndexError(f"prebuilt index {directory} was written in another format than {FORMAT}; {rebuild}")
    differ = []
    for signal, here in encoders(engine).items():
        there = manifest["encoders"].get(signal)
        if there is None:
            differ.append(f"it holds no {signal} vectors")
        elif there["fingerprint"] != here["fingerprint"]:
            alike = " (same model path, other weights or cache format)" if there["made_by"] == here["made_by"] else ""
            differ.append(f"{signal} by {there['made_by']}, here {here['made_by']}{alike}")
    if differ:
        # the dense cache key holds the CPU where the backend is chosen per CPU (``backend_key``): say how to avoid it
        portable = (" (an index built and routed with --embedder-backend torch holds on any CPU)"
                    if any(d.startswith("dense") for d in differ) else "")
        raise PrebuiltIndexError(
            f"prebuilt index {directory} was built with other encoders than this router's, and every document would be "
            f"encoded again: {'; '.join(differ)}. Build it with the model options you route with{portable}: "
            f"skill-assets index --pool DIR --out {directory}")
    built: dict[str, str] = manifest["skills"]
    now = {s.id: skill_hash(s) for s in skills}
    return IndexCheck(directory, manifest["built"], sum(built.get(sid) == h for sid, h in now.items()),
                      [sid for sid, h in now.items() if sid in built and built[sid] != h],
                      [sid for sid in now if sid not in built], [sid for sid in built if sid not in now])
