"""A model's published recipe vs what the run had (recipes are data: rules/recipes/*.toml).

Only what the input shows is judged: a requirement nothing in the bundle speaks to is listed as
not checked rather than counted as unmet.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from vllm_triage.core.finding import Finding
from vllm_triage.core.provenance import Provenance
from vllm_triage.fingerprint.data import CheckData, Recipe
from vllm_triage.fingerprint.model import Fingerprint
from vllm_triage.fingerprint.values import canonical, cuda_major_minor, driver_tuple, version_tuple
from vllm_triage.fingerprint.views import (
    SERVER_VIEW,
    first,
    host_driver,
    parallel_gpus,
    visible_gpus,
    vllm_version,
)


@dataclass
class _Verdict:
    unmet: list[str] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)
    evidence: list[Provenance] = field(default_factory=list)

    def fail(self, text: str, *where: Provenance) -> None:
        self.unmet.append(text)
        self.evidence.extend(w for w in where if w not in self.evidence)


def check_recipes(fp: Fingerprint, data: CheckData) -> list[Finding]:
    model = fp.get("arg.model") or fp.get("vllm.model") or fp.get("engine.model")
    if model is None or not isinstance(model.value, str):
        return []
    findings = []
    for recipe in data.recipes:
        if not recipe.model.search(model.value):
            continue
        verdict = _judge(fp, recipe)
        if not verdict.unmet:
            continue
        unchecked = (
            f" Not checked (not in the input): {', '.join(verdict.unchecked)}." if verdict.unchecked else ""
        )
        findings.append(
            Finding(
                "recipe-not-met",
                "warning",
                f"{model.value} is served differently from {recipe.name}'s published recipe: "
                f"{'; '.join(verdict.unmet)}.{unchecked}",
                [model.source, *verdict.evidence],
                f"Start from the recipe as published ({recipe.ref or recipe.file}) and change one "
                f"thing per trial.",
            )
        )
    return findings


def _judge(fp: Fingerprint, recipe: Recipe) -> _Verdict:
    verdict = _Verdict()
    _gpus(fp, recipe, verdict)
    _image(fp, recipe, verdict)
    _driver(fp, recipe, verdict)
    if recipe.min_parallel_gpus:
        spread = parallel_gpus(fp)
        if spread.value < recipe.min_parallel_gpus:
            verdict.fail(
                f"the model is spread over {spread.value} GPU(s) ({spread.how}), the recipe over "
                f"{recipe.min_parallel_gpus}",
                *spread.evidence,
            )
    for name, want in recipe.args.items():
        have = fp.get(f"arg.{name}")
        flag = "--" + name.replace("_", "-")
        if have is None:
            verdict.fail(f"{flag} is not given (recipe: {_flag_text(flag, want)})")
        elif canonical(have.value) != canonical(want):
            verdict.fail(f"{flag} is {have.value} (recipe: {want})", have.source)
    return verdict


def _flag_text(flag: str, want: str) -> str:
    return flag if want == "true" else f"{flag} {want}"


def _gpus(fp: Fingerprint, recipe: Recipe, verdict: _Verdict) -> None:
    models = first(fp, ".gpu_models", SERVER_VIEW)
    visible = visible_gpus(fp)
    if recipe.gpu_model is not None:
        if models is None or not models[1].value:
            verdict.unchecked.append("GPU model")
        elif not all(recipe.gpu_model.search(str(name)) for name in models[1].value):
            shown = sorted(set(map(str, models[1].value)))
            verdict.fail(
                f"the GPUs are {', '.join(shown)} (recipe: {recipe.gpu_model.pattern})", models[1].source
            )
    if recipe.min_gpus:
        if visible is None:
            verdict.unchecked.append("number of GPUs")
        elif visible.value < recipe.min_gpus:
            verdict.fail(
                f"{visible.value} GPU(s) visible ({visible.how}; recipe: {recipe.min_gpus})",
                *visible.evidence,
            )
    if recipe.min_gpu_memory_gib:
        totals = first(fp, ".gpu_memory_total_mib", SERVER_VIEW)
        sizes = [m for m in (totals[1].value if totals else []) or [] if isinstance(m, (int, float))]
        if not sizes:
            verdict.unchecked.append("GPU memory")
            return
        count = min(len(sizes), visible.value) if visible is not None else len(sizes)
        gib = max(sizes) * count / 1024
        if totals is not None and gib < recipe.min_gpu_memory_gib:
            verdict.fail(
                f"{count} GPU(s) hold {gib:.0f} GiB in all (recipe: at least {recipe.min_gpu_memory_gib:.0f} "
                "GiB)",
                totals[1].source,
            )


def _image(fp: Fingerprint, recipe: Recipe, verdict: _Verdict) -> None:
    tag = fp.get("image.tag")
    version = vllm_version(fp)
    if recipe.image_tags:
        if tag is None:
            if recipe.min_vllm is None:
                verdict.unchecked.append("image")
        elif str(tag.value).lower() not in recipe.image_tags and not _new_enough(version, recipe.min_vllm):
            verdict.fail(
                f"the image tag is {tag.value} (recipe: {' or '.join(recipe.image_tags)})", tag.source
            )
            return
    tagged = tag is not None and str(tag.value).lower() in recipe.image_tags
    if recipe.min_vllm and version is not None and not tagged and not _new_enough(version, recipe.min_vllm):
        verdict.fail(f"vLLM {version.value} (recipe: {recipe.min_vllm} or newer)", version.source)
    if recipe.cuda_build:
        build = fp.get("cuda.build")
        if build is not None and cuda_major_minor(build.value) != recipe.cuda_build:
            verdict.fail(
                f"the image is built for CUDA {build.value} (recipe: CUDA {recipe.cuda_build})", build.source
            )


def _new_enough(version: object, minimum: str | None) -> bool:
    if minimum is None or version is None:
        return False
    have = version_tuple(getattr(version, "value", version))
    return have is not None and have >= (version_tuple(minimum) or ())


def _driver(fp: Fingerprint, recipe: Recipe, verdict: _Verdict) -> None:
    if not recipe.min_driver_branch:
        return
    found = host_driver(fp)
    have = driver_tuple(found[1].value) if found is not None else None
    if found is None or have is None:
        verdict.unchecked.append("driver")
    elif have[0] < recipe.min_driver_branch:
        verdict.fail(f"driver {found[1].value} (recipe: r{recipe.min_driver_branch}+)", found[1].source)
