"""``serve --watch``: follow edits to the pool while the server answers.

Skill folders change while an agent runs; without this a new, edited or deleted skill is seen only after a restart.
A background thread looks at the pool roots every ``POLL_SECONDS`` (each ``SKILL.md``'s, or a JSONL pool's, mtime
and size: stdlib only, the same candidates ingest walks) and, once they have been quiet for ``QUIET_SECONDS`` (an
editor or a ``git pull`` writes several files in a burst; indexing each write would only be stopped by the next),
reloads the pool and hands it to ``Engine.start_index``. Only what changed is redone: the pool is read through the
parse outcomes the last read kept in memory (``ParsedFiles``: only files whose identity changed are parsed, and no
manifest file is loaded or written in the serving process), the engine tokenizes only new documents for BM25 and its
content-keyed cache encodes only skills whose text changed. Routing reads the published index once per
call and the engine keeps the full index it replaces published until the new full one is built, so answers go on,
with every signal, over the old pool until the new one replaces it in one assignment. A reload shares the
interpreter with the answers, so what it must do over the whole pool is kept to whole-array steps and look-ups of
what the last reload computed, and its loops over the pool give way to the answers in flight (``give_way``): an answer
made beside a re-index takes its Python steps at nearly its quiet speed, the re-index taking longer instead; before
it follows the pool the thread loads the document encoder and reads the pool once, work the first reload would
otherwise do beside the answers, and moves what the server holds then out of the garbage collector's walks
(``keep_out_of_collections``), which a reload's new objects would otherwise set off.

A skill whose new text is rejected (front matter removed, unparseable) is not dropped: the version last indexed
stays routed and one line names the file and the reason, so a half-finished edit never takes a skill away. A
reload that fails as a whole (a root gone, a duplicate id, no skill left) keeps the pool as it is, said so.
"""
from __future__ import annotations

import gc
import os
import stat
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from skill_assets.lib.core.skill_files import FolderReject, walk_skill_paths
from skill_assets.lib.retrieval.give_way import gently
from skill_assets.lib.retrieval.pool_index import IndexBuild
from skill_assets.lib.retrieval.pool_manifest import Kept, ParsedFiles, PoolManifest, Walk
from skill_assets.lib.retrieval.pools import PoolLoad, Rejected, Skill, load_pools
from skill_assets.router.routing import Router, stderr_log

#: seconds between two looks at the pool
POLL_SECONDS = 1.0
#: seconds without a write before a reload: a burst of writes (an editor's save, a ``git pull``) is over within it.
#: Counted from the newest changed file's mtime (a removed one's folder's), so a change already this quiet when a look
#: finds it is reloaded at that look: with ``POLL_SECONDS`` a reload begins 0.5 to 1.5 s after the last write
QUIET_SECONDS = 0.5

#: the interpreter's thread switch interval while a reload runs (Python's default: 5 ms). A reload is mostly
#: pure-Python work (parsing, tokenizing) beside calls whose encoders release the GIL at every step and wait to take
#: it back: at the default each of those waits could last the whole interval
RELOAD_SWITCH_SECONDS = 0.0005

#: each watched file's path and (mtime in ns, size)
Snapshot = dict[str, tuple[int, int]]


def snapshot(roots: Sequence[str | Path], walks: dict[str, Walk] | None = None) -> Snapshot:
    """The state of every file the pool is loaded from: a folder root's ``SKILL.md`` files (``walk_skill_paths``:
    ingest's candidates and folder rules), a JSONL root itself. A file that vanishes mid-walk is simply absent.

    ``walks``: filled with each folder root's walk and its files' ``lstat`` (by the root as given), for the read of
    the pool this look decides (``ParsedFiles``), which then neither walks nor stats the files again. A symlink's
    state is its target's (an edit of the target is a change), its ``lstat`` what the read keeps outcomes by."""
    state: Snapshot = {}
    for root in roots:
        root = Path(root).expanduser()
        try:
            folder = not root.is_file()
            entries = list(gently(walk_skill_paths(root))) if folder else [root]
        except OSError:
            continue  # a root that cannot be listed now: the reload says why
        walk: Walk = []
        for path in gently(entries):
            st = None
            if not isinstance(path, FolderReject):
                try:
                    st = os.lstat(path)
                    target = os.stat(path) if stat.S_ISLNK(st.st_mode) else st
                    state[str(path)] = (target.st_mtime_ns, target.st_size)
                except OSError:
                    pass  # gone, or a link to nothing: not watched, and the read says why
            walk.append((path, st))
        if walks is not None and folder:
            walks[str(root)] = walk
    return state


def differing(a: Snapshot, b: Snapshot) -> list[str]:
    """The files added, removed or changed between two snapshots."""
    return [path for path in a.keys() | b.keys() if a.get(path) != b.get(path)]


def removed_at(path: str) -> float | None:
    """When ``path`` was removed, as far as the files say: the mtime of the nearest folder above it that is left (a
    removal sets its folder's mtime); None where none can be read."""
    folder = os.path.dirname(path)
    while True:
        try:
            return os.stat(folder).st_mtime_ns / 1e9
        except FileNotFoundError:
            if os.path.dirname(folder) == folder:
                return None
            folder = os.path.dirname(folder)
        except OSError:
            return None


def keep_out_of_collections() -> None:
    """Move what the server holds now (modules, models, the indexed pool: some 600,000 objects the collector tracks
    over 10,000 skills) out of the garbage collector's walks (``gc.freeze``), after collecting what is garbage now.

    Each reload leaves a new pool's objects behind, and every few reloads they start a full collection, which holds
    the interpreter while it walks every tracked object: 326 ms inside one re-index, 520 ms for one ``gc.collect()``
    on two busy cores, every answer meanwhile waiting. Frozen objects the server later lets go (a replaced pool's
    skills, rows and arrays, which hold no reference cycles) are still freed by reference counting; only cyclic
    garbage among them would stay."""
    gc.collect()
    gc.freeze()


class PoolWatcher:
    """Reloads ``roots`` into ``router`` when their files change: ``poll()`` is one look (debounced), ``reload()``
    one reload now, ``start()`` / ``stop()`` the background thread that polls."""

    def __init__(self, router: Router, roots: Sequence[str | Path], log: Callable[[str], None] = stderr_log,
                 quiet: float = QUIET_SECONDS, clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], float] = time.time) -> None:
        """``clock``: the time the quiet is counted on; ``wall``: the time files' mtimes are read against."""
        self.router, self.roots, self.log = router, list(roots), log
        self.quiet, self.clock, self.wall = quiet, clock, wall
        self._indexed = snapshot(self.roots)   # the files as the published pool was loaded from them
        self._seen = self._indexed             # the files at the last look
        self._changed_at: float | None = None  # when the last look found them changed
        self._reported: set[str] = set()       # rejected sources already logged: a reload repeats none of them
        #: each folder root's parse outcomes at the last read, by (real path, size cap): the next read parses only
        #: files whose identity changed; a root read for the first time goes through its manifest on disk
        self._parsed: dict[tuple[str, int], dict[str, Kept]] = {}
        self._build: IndexBuild | None = None
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def poll(self) -> bool:
        """Look at the pool once; reload it if it changed and has since been quiet for ``quiet`` seconds. Returns
        whether it reloaded."""
        walks: dict[str, Walk] = {}
        now, current = self.clock(), snapshot(self.roots, walks)
        if current != self._seen:
            self._changed_at = now - self._quiet_for(current)
            self._seen = current
        if current == self._indexed or self._changed_at is None or now - self._changed_at < self.quiet:
            return False
        changed = len(differing(current, self._indexed))
        self.log(f"watch: {changed} file{'s' * (changed != 1)} changed; reloading the pool")
        self.reload(current, walks)
        return True

    def _quiet_for(self, current: Snapshot) -> float:
        """Seconds since the newest write to the files changed since the last look, by their mtimes (a removed file's:
        its nearest folder left, whose mtime the removal set); 0 where an mtime lies ahead (a clock set otherwise) or
        none is left. A copy that keeps old mtimes looks quiet at once: reloaded mid-way, it is reloaded again once
        the rest is seen."""
        written = [current[path][0] / 1e9 if path in current else removed_at(path)
                   for path in differing(current, self._seen)]
        if None in written:
            return 0.0
        return max(0.0, self.wall() - max(written))

    def reload(self, files: Snapshot | None = None, walks: dict[str, Walk] | None = None) -> bool:
        """Load the pool now and index it (returns once the full index is published: only changed skills are
        encoded); ``files``: the snapshot it is loaded as, ``walks`` the folder roots' walks that snapshot took
        (default: both taken now). Returns whether the pool was replaced; on failure the served pool stays, and one
        line says why. Calls answered meanwhile take the GIL back sooner (``RELOAD_SWITCH_SECONDS``)."""
        switch = sys.getswitchinterval()
        sys.setswitchinterval(RELOAD_SWITCH_SECONDS)
        try:
            if files is None:
                walks = {}
                files = snapshot(self.roots, walks)
            return self._reload(files, walks or {})
        finally:
            sys.setswitchinterval(switch)

    def _reload(self, files: Snapshot, walks: dict[str, Walk]) -> bool:
        self._indexed = self._seen = files
        self._changed_at = None
        old = self.router.skill_by_id
        try:
            load = self._read(walks=walks)
        except (OSError, ValueError) as exc:
            self.log(f"watch: the pool was not reloaded ({exc}); the last indexed pool stays served")
            return False
        skills = load.skills + self._kept(load.skills, load.rejected)
        if not skills:
            self.log("watch: the pool has no valid skills now; the last indexed pool stays served")
            return False
        new = {s.id: s for s in gently(skills)}
        added = sum(sid not in old for sid in gently(new))
        changed = sum(sid in old and old[sid] != s for sid, s in gently(new.items()))
        removed = sum(sid not in new for sid in gently(old))
        self._build = self.router.start_index(skills)
        try:
            stats = self._build.wait()
        except Exception as exc:  # noqa: BLE001 -- the engine logged it; answers go on over what it published
            # the engine published the new pool's BM25 index only where no full index was published before it
            published = self.router.pool.skills == tuple(skills)
            self.log(f"watch: the pool's full index was not built ({type(exc).__name__}: {exc}): "
                     + (f"its {len(skills)} skills are routed by BM25 alone" if published
                        else "the last indexed pool stays served"))
            return published
        self.log(f"watch: pool reloaded: {added} added, {changed} changed, {removed} removed; {len(skills)} skills, "
                 f"{stats.encoded} documents encoded, {stats.cached} cached; SKILL.md files parsed: {load.files.parsed} "
                 f"({load.files.unchanged} unchanged)")
        return True

    def _read(self, log: Callable[[str], None] | None = None, walks: dict[str, Walk] | None = None) -> PoolLoad:
        """The pool's roots read now (``load_pools``; ``log``: its line on flagged skills, default the watcher's),
        each folder root through the outcomes its last read kept and the walk ``walks`` holds for it, if any."""
        reading: dict[tuple[str, int], ParsedFiles] = {}

        def parsed_files(root: Path, max_file_bytes: int) -> ParsedFiles:
            key = (os.path.realpath(root), max_file_bytes)
            last = self._parsed.get(key)
            files = reading[key] = (ParsedFiles(last, (walks or {}).get(str(root))) if last is not None
                                    else PoolManifest(self.router.cache_dir, root, max_file_bytes))
            return files

        load = load_pools(self.roots, log=log or self.log, parsed_files=parsed_files)
        self._parsed.update({key: files.kept for key, files in reading.items()})
        return load

    def _kept(self, skills: list[Skill], rejected: Sequence[Rejected]) -> list[Skill]:
        """The skills routed now whose file the reload rejected: each keeps its last good version (unless a new
        skill took its id meanwhile). Logs each newly rejected file with its reason once."""
        routed = {s.source: s for s in gently(self.router.skills)}
        taken = {s.id for s in skills}
        kept = []
        for entry in rejected:
            last_good = routed.get(entry.source)
            keep = last_good is not None and last_good.id not in taken
            if keep:
                kept.append(last_good)
                taken.add(last_good.id)
            if entry.source not in self._reported:
                self.log(f"watch: {entry}" + ("; its last good version stays routed" if keep else "; not routed"))
        self._reported = {entry.source for entry in rejected}
        return kept

    def start(self) -> PoolWatcher:
        """Poll every ``POLL_SECONDS`` in a daemon thread, until ``stop()``."""
        self._thread = threading.Thread(target=self._run, name="skill-assets-watch", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        if "bm25" in self.router.signals:
            self.router.keep_lexical_tokens()  # the first reload then tokenizes only what changed
        try:
            # the document encoder, loaded now: over a cached pool nothing has loaded it, and the first reload would
            # import torch and sentence-transformers (seconds of the interpreter) while it answers
            self.router.dense.model  # noqa: B018
            self._read(log=lambda msg: None)  # the first reload then parses only what changed, from memory
        except Exception as exc:  # noqa: BLE001 -- the first reload does this work again, and says why it fails
            self.log(f"watch: preparing for reloads failed ({type(exc).__name__}: {exc}); the first reload reads the "
                     "pool afresh")
        keep_out_of_collections()
        self.log(f"watch: following {len(self._indexed):,} files under {len(self.roots)} pool root(s)")
        while not self._stopping.wait(POLL_SECONDS):
            try:
                self.poll()
            except Exception as exc:  # noqa: BLE001 -- one failed look must not end the watching
                self.log(f"watch: looking at the pool failed ({type(exc).__name__}: {exc}); trying again")

    def stop(self, timeout: float = 10.0) -> None:
        """End the thread, and a build it started, at their next step (what was encoded stays cached); what the
        thread kept out of the collector's walks is walked again."""
        self._stopping.set()
        if self._build is not None:
            self._build.stop(timeout)
        if self._thread is not None:
            self._thread.join(timeout)
            gc.unfreeze()
