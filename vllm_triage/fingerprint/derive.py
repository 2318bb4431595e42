"""Facts derived from what was read: the image's CUDA build and the driver it needs, the vLLM
release a tag names, the GPU selection in one spelling.

A derived fact carries the provenance of the value it was derived from (the tag, the Env line) and
a note saying how, so a reader can follow the reasoning back to a line of an artefact.
"""

from __future__ import annotations

import re

from vllm_triage.core.provenance import Sourced
from vllm_triage.fingerprint.data import CheckData
from vllm_triage.fingerprint.model import Fingerprint
from vllm_triage.fingerprint.values import cuda_major_minor, gpu_selection, version_tuple

# Notes of container.gpus that mean its bare numbers are device ids, not a count.
_ID_NOTES = re.compile(r"VISIBLE_DEVICES|DeviceIDs|CDI|HostConfig\.Devices|CreateCommand --device", re.I)


def derive_all(fingerprint: Fingerprint, data: CheckData) -> None:
    _gpu_selection(fingerprint)
    _image_parts(fingerprint)
    _cuda_build(fingerprint, data)
    _min_driver(fingerprint, data)
    _container_without_cuda(fingerprint)


def split_image(ref: str) -> tuple[str, str | None, str | None]:
    """`repo[:tag][@digest]` → (repository, tag, digest); a registry port is not a tag."""
    ref = ref.strip()
    digest = None
    if "@" in ref:
        ref, digest = ref.split("@", 1)
    tag = None
    last = ref.rsplit("/", 1)[-1]
    if ":" in last:
        ref, tag = ref.rsplit(":", 1)
    return ref, tag, digest


def _gpu_selection(fp: Fingerprint) -> None:
    given = fp.knobs.get("container.gpus")
    if given is None:
        return
    request = fp.value("container.gpu_request")
    ids = bool(_ID_NOTES.search(given.note or "")) or bool(
        isinstance(request, dict) and request.get("device_ids")
    )
    selection = gpu_selection(given.value, ids_not_count=ids)
    if selection is None:
        return
    fp.add_fact("container.gpu_selection", str(selection), given.source, "container.gpus in one spelling")
    if selection.size is not None:
        fp.add_fact("container.gpus_requested", selection.size, given.source)


def _image_parts(fp: Fingerprint) -> None:
    ref = fp.knobs.get("image.ref")
    if ref is None or not isinstance(ref.value, str):
        return
    repository, tag, digest = split_image(ref.value)
    fp.add_fact("image.repository", repository, ref.source)
    if tag:
        fp.add_fact("image.tag", tag, ref.source)
        version = version_tuple(tag)
        if version is not None and re.match(r"v?\d+\.\d+", tag):
            fp.add_fact("image.vllm_version", ".".join(map(str, version)), ref.source, "from the image tag")
    if digest and "image.digest" not in fp.knobs:
        fp.knobs["image.digest"] = Sourced(digest, ref.source, "from image.ref")


def _cuda_build(fp: Fingerprint, data: CheckData) -> None:
    """cuda.build when collect_env did not state it: the image's Env, then the tag, then the default
    CUDA of the official image for the tag's vLLM release."""
    if "cuda.build" in fp.facts:
        return
    for name, how in (
        ("image.cuda_version", "from the image's CUDA_VERSION"),
        ("env.CUDA_VERSION", "from CUDA_VERSION in the environment"),
        ("image.nvidia_require_cuda", "from the image's NVIDIA_REQUIRE_CUDA"),
        ("env.NVIDIA_REQUIRE_CUDA", "from NVIDIA_REQUIRE_CUDA in the environment"),
        ("torch.version", "from the torch build suffix"),
    ):
        found = fp.get(name)
        cuda = cuda_major_minor(found.value) if found is not None else None
        if found is not None and cuda and (name != "torch.version" or "+cu" in str(found.value)):
            fp.add_fact("cuda.build", cuda, found.source, how)
            return
    tag = fp.get("image.tag")
    if tag is None:
        return
    text = str(tag.value).lower()
    if text in data.image_tag_cuda:
        fp.add_fact(
            "cuda.build", data.image_tag_cuda[text], tag.source, f"the {text} image is built with that CUDA"
        )
        return
    suffix = re.search(r"(?:^|-)(cu\d{3})(?:-|$)", text)
    if suffix:
        fp.add_fact(
            "cuda.build", cuda_major_minor(suffix.group(1)), tag.source, f"from the -{suffix.group(1)} tag"
        )
        return
    repository = str(fp.value("image.repository", "")).lower()
    version = version_tuple(fp.value("image.vllm_version", ""))
    if repository in data.official_images and version is not None:
        for since, cuda in data.vllm_image_cuda:
            if version >= (version_tuple(since) or ()):
                fp.add_fact(
                    "cuda.build",
                    cuda,
                    tag.source,
                    f"the default CUDA of vllm/vllm-openai images from v{since}",
                )
                return


def _min_driver(fp: Fingerprint, data: CheckData) -> None:
    build = fp.get("cuda.build")
    if build is None:
        return
    row = data.driver_for(str(cuda_major_minor(build.value)))
    if row is not None:
        fp.add_fact(
            "image.min_driver", row.min_driver, build.source, f"CUDA {row.cuda} needs driver r{row.branch}+"
        )


def _container_without_cuda(fp: Fingerprint) -> None:
    """collect_env inside the container found no CUDA device although torch is a CUDA build: the
    container sees no GPU (a CPU-only torch build says nothing about the GPUs)."""
    available = fp.get("container.cuda_available")
    if available is None or available.value is not False or fp.get("cuda.build") is None:
        return
    fp.add_fact("container.gpu_count", 0, available.source, "CUDA build of torch, but CUDA is not available")
