"""What a run's declared effects require, what this machine can enforce of them, and the
confinement policy handed to the recipe's process (``confine.py`` applies it).

One function decides, for a recipe's environment and effects, what cannot be enforced
here (``unenforceable``); ``run`` refuses on it (exit 5) unless the committed policy says
``run: {enforcement: best-effort}``, and ``inspect`` and ``status`` show it. ``plan``
builds the policy and the ``enforced`` document receipts and run records carry:

``{"filesystem": "none"|"read"|"write"|null, "network": true|false|null,
"by": [mechanisms], "not_enforced": [what was declared but not enforced]}``, where
``null`` means the declared effect was not enforced (best-effort only).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from librarian.core.manifests import RecipeEffects, RecipeManifest
from librarian.core.model import Policy
from librarian.gate.confine import RUNTIME_PATHS, landlock_abi, seccomp_allowed, userns_allowed
from librarian.gate.environments import wasm_host_paths, wasm_in_process

#: Environments confined by this module (docker and wasm confine themselves).
CONFINED_ENVIRONMENTS = ("shell", "python")


@dataclass(frozen=True, slots=True)
class Support:
    """What this kernel can enforce."""

    linux: bool
    landlock_abi: int  # 0: no Landlock
    userns: bool  # unprivileged user (and network) namespaces look allowed
    seccomp: bool  # a seccomp filter for this architecture can be installed


@functools.cache
def kernel_support() -> Support:
    """Probe the kernel once per process: a version call and sysctl files, no process."""
    return Support(sys.platform.startswith("linux"), landlock_abi(), userns_allowed(),
                   seccomp_allowed())


@dataclass(frozen=True, slots=True)
class Plan:
    """How a run is confined: ``policy`` for ``confine.apply`` (None: nothing to apply)
    and the ``enforced`` document for receipts."""

    policy: Mapping[str, Any] | None
    enforced: Mapping[str, Any]


def declared(effects: RecipeEffects | None) -> tuple[str, bool]:
    """The declared filesystem level and network, undeclared meaning unrestricted."""
    filesystem = (effects.filesystem if effects is not None else None) or "write"
    network = True if effects is None or effects.network is None else effects.network
    return filesystem, network


def unenforceable(environment: str, effects: RecipeEffects | None,
                  support: Support | None = None) -> tuple[str, ...]:
    """What of the declared effects this machine cannot enforce (empty: all of it)."""
    if environment not in CONFINED_ENVIRONMENTS:
        return ()
    support = kernel_support() if support is None else support
    filesystem, network = declared(effects)
    missing = []
    if filesystem != "write" and support.landlock_abi < 1:
        why = "this kernel has no Landlock" if support.linux else "not Linux"
        missing.append(f"filesystem: {filesystem} ({why})")
    if not network and not (support.userns or support.seccomp):
        why = ("neither user namespaces nor seccomp are available" if support.linux
               else "not Linux")
        missing.append(f"network: false ({why})")
    return tuple(missing)


def enforces_everything(support: Support | None = None) -> bool:
    """Whether this machine enforces any effects a recipe may declare (then no manifest
    needs reading to know that a tool's are)."""
    return not unenforceable("shell", RecipeEffects("none", False), support)


def summary_enforceability(summary: Mapping[str, Any]
                           ) -> tuple[bool | None, tuple[str, ...]]:
    """Whether the recipe a manifest summary (``library.summary.summarize``) describes
    can have its effects enforced here, and what cannot be (None: not a recipe)."""
    if summary.get("kind") != "recipe":
        return None, ()
    declared_effects = summary.get("effects") or {}
    effects = RecipeEffects(filesystem=declared_effects.get("filesystem"),
                            network=declared_effects.get("network"))
    missing = unenforceable(str(summary.get("environment")), effects)
    return not missing, missing


def plan(manifest: RecipeManifest, policy: Policy, *, recipe_dir: Path, work: Path,
         tmp: Path, inputs: Mapping[str, object], program: str,
         support: Support | None = None) -> Plan:
    """The confinement of a shell or python run (everything enforceable, the rest named
    in ``not_enforced``), and of the process hosting a wasm module (its memory is the
    store's to cap); docker and CLI wasm runs are described, not confined here."""
    filesystem, network = declared(manifest.effects)
    environment = manifest.environment
    if environment == "docker":
        return Plan(None, {"filesystem": filesystem, "network": network, "by": ["docker"],
                           "not_enforced": []})
    if environment == "wasm":  # WASI: only the pre-opened directories, no sockets
        if not wasm_in_process(program):
            return Plan(None, {"filesystem": filesystem, "network": False,
                               "by": [f"wasi ({Path(program).name})"], "not_enforced": []})
        # The python process hosting the module is confined too, as far as the kernel
        # can (beyond what WASI guarantees): it needs no file outside the run, no socket.
        host = plan(replace(manifest, environment="python",
                            effects=RecipeEffects("none", False)), policy,
                    recipe_dir=recipe_dir, work=work, tmp=tmp, inputs=inputs,
                    program=program, support=support)
        hosting = {k: v for k, v in (host.policy or {}).items() if k != "memory_bytes"}
        if "read" in hosting:  # the runner script and the package, wherever installed
            hosting["read"] = [*hosting["read"], *wasm_host_paths()]
        mechanisms = ["wasi (wasmtime)", *(m for m in host.enforced["by"] if m != "rlimits")]
        return Plan(hosting or None, {"filesystem": filesystem, "network": False,
                                      "by": mechanisms, "not_enforced": []})
    support = kernel_support() if support is None else support
    missing = unenforceable(environment, manifest.effects, support)
    by: list[str] = ["rlimits"]
    result: dict[str, Any] = {"filesystem": filesystem, "network": network}
    confinement: dict[str, Any] = {"memory_bytes": policy.run_memory_mb << 20,
                                   "processes": policy.run_processes,
                                   "landlock_abi": support.landlock_abi}
    if filesystem != "write":
        if support.landlock_abi >= 1:
            paths = _paths(manifest, inputs)
            confinement["filesystem"] = filesystem
            confinement["read"] = [*_runtime(program), str(recipe_dir), *paths[0]]
            confinement["write"] = [str(work), str(tmp), *paths[1]]
            by.append("landlock")
        else:
            result["filesystem"] = None
    if not network:
        if support.userns or support.seccomp:
            # seccomp refuses every socket(); a network namespace only where it cannot
            # (a user namespace widens what the recipe can reach in the kernel).
            confinement.update(network="deny", seccomp=support.seccomp,
                               netns=not support.seccomp)
            by.append("seccomp" if support.seccomp else "network namespace")
            if support.landlock_abi >= 4 and "landlock" not in by:
                by.append("landlock")
        else:
            result["network"] = None
    result["by"] = by
    result["not_enforced"] = list(missing)
    return Plan(confinement, result)


def wasm_preopens(manifest: RecipeManifest, inputs: Mapping[str, object],
                  work: Path) -> list[tuple[str, str, bool]]:
    """What a wasm run sees: its work directory (as ``.``, writable) and the directories
    given as ``path`` inputs, at their own paths, writable only when declared so (WASI
    opens directories only: a file given as a path input is not visible)."""
    readable, writable = _paths(manifest, inputs)
    preopens = [(str(work), ".", True)]
    for paths, mutable in ((readable, False), (writable, True)):
        preopens += [(path, path, mutable) for path in paths if Path(path).is_dir()]
    return preopens


def _paths(manifest: RecipeManifest, inputs: Mapping[str, object]
           ) -> tuple[list[str], list[str]]:
    """The ``path`` inputs given to this run: (readable, writable). A writable one must
    exist (the rule is on that file or directory, not its parent)."""
    readable: list[str] = []
    writable: list[str] = []
    for spec in manifest.inputs:
        value = inputs.get(spec.name)
        if spec.type != "path" or not isinstance(value, str):
            continue
        (writable if spec.writable else readable).append(value)
    return readable, writable


def _runtime(program: str) -> list[str]:
    """What the interpreter needs besides the system's runtime: its prefix (the python
    environment) and the directory of the program's real path."""
    paths = list(RUNTIME_PATHS)
    if Path(program).resolve() == Path(sys.executable).resolve():
        paths += sorted({sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix})
    paths.append(str(Path(program).resolve().parent))
    return paths


def enforcement_text(enforced: Mapping[str, Any] | None) -> Sequence[str]:
    """One line per effect that was declared but not enforced (empty when all were)."""
    if not enforced:
        return ()
    return tuple(str(item) for item in enforced.get("not_enforced", ()))
