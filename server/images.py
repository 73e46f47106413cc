"""Images attached to questions: checked by content, stored once by SHA-256, outside checkpoints."""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from seekgraph.graph.api import ImageRef


class ImageError(ValueError):
    """An image that cannot be accepted; the message says which and why."""


def sniff(data: bytes) -> str | None:
    """The media type from the file's first bytes (never from its name)."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def undecodable(data: bytes) -> str | None:
    """Why Pillow cannot decode the whole image, or None when it can.

    The magic bytes only say what a file claims to be: a truncated PNG passes them and would
    reach the vision model.
    """
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as image:
            image.load()
    except (OSError, UnidentifiedImageError, SyntaxError, ValueError) as exc:
        return str(exc) or type(exc).__name__
    except Image.DecompressionBombError:
        return "too many pixels"
    return None


def pixels_of(data: bytes) -> int | None:
    """Width × height from the image's header (nothing is decoded), or None if unreadable."""
    from PIL import Image, UnidentifiedImageError

    try:
        with warnings.catch_warnings():  # a size past Pillow's own bomb bound is ours to refuse
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as image:
                width, height = image.size
    except (OSError, UnidentifiedImageError, SyntaxError, ValueError):
        return None
    except Image.DecompressionBombError as exc:
        found = re.search(r"\((\d+) pixels\)", str(exc))
        return int(found.group(1)) if found else 2**40
    return width * height


@dataclass
class Checked:
    """Images read from a request and measured from their headers; none decoded yet."""

    blobs: list[tuple[str, bytes, str]] = field(default_factory=list)
    """(sha256, bytes, media type) of each image."""
    pixels: int = 0
    """Their pixels together."""


def check_images(
    encoded: list[str], max_images: int, max_bytes: int, max_pixels: int | None = None
) -> Checked:
    """Read the images' bytes and sizes, and refuse them past the bounds before decoding any.

    CPU-bound (base64 of megabytes): call it in a worker thread.
    """
    if len(encoded) > max_images:
        raise ImageError(f"{len(encoded)} images attached; at most {max_images} are allowed")
    checked = Checked()
    for i, item in enumerate(encoded, start=1):
        if item.startswith("data:"):
            header, comma, payload = item.partition(",")
            if not comma:
                raise ImageError(
                    f"image {i} is a data URL without a comma; send data:image/png;base64,<data>"
                )
        else:
            payload = item
        try:
            data = base64.b64decode(payload, validate=True)
        except (binascii.Error, ValueError):
            raise ImageError(f"image {i} is not valid base64") from None
        if len(data) > max_bytes:
            raise ImageError(f"image {i} has {len(data)} bytes; the limit is {max_bytes}")
        media = sniff(data)
        if media is None:
            raise ImageError(f"image {i} is not a PNG, JPEG, WebP or GIF image")
        pixels = pixels_of(data)
        if pixels is None:
            raise ImageError(f"image {i} looks like {media} but its header cannot be read")
        checked.pixels += pixels
        checked.blobs.append((hashlib.sha256(data).hexdigest(), data, media))
    if max_pixels is not None and checked.pixels > max_pixels:
        raise ImageError(
            f"the images have {checked.pixels / 1e6:,.1f} million pixels together; the limit is "
            f"{max_pixels / 1e6:,.1f} million (SEEKGRAPH_MAX_IMAGE_PIXELS_PER_REQUEST) — send "
            "smaller or fewer images"
        )
    return checked


def store_images(
    checked: Checked,
    store: Path,
    owner: str,
    thread_bytes: int = 0,
    max_thread_bytes: int | None = None,
) -> list[ImageRef]:
    """Decode each image whole, then store them; the store is per owner so nobody sees another's.

    CPU-bound (decoding): call it in a worker thread, with the pixels counted against the key.
    """
    refs: list[ImageRef] = []
    blobs: list[tuple[str, bytes]] = []
    for i, (digest, data, media) in enumerate(checked.blobs, start=1):
        problem = undecodable(data)
        if problem is not None:
            raise ImageError(f"image {i} looks like {media} but cannot be decoded ({problem})")
        blobs.append((digest, data))
        refs.append({"sha256": digest, "media_type": media, "bytes": len(data)})
    total = thread_bytes + sum(len(data) for _, data in blobs)
    if max_thread_bytes is not None and total > max_thread_bytes:
        raise ImageError(
            f"this thread would hold {total} bytes of images; the limit is {max_thread_bytes} "
            "— start a new thread for more images"
        )
    folder = owner_folder(store, owner)
    folder.mkdir(parents=True, exist_ok=True)
    for digest, data in blobs:  # written only once everything was accepted
        path = folder / digest
        if not path.exists():
            path.write_bytes(data)
    return refs


def accept_images(
    encoded: list[str],
    store: Path,
    owner: str,
    max_images: int,
    max_bytes: int,
    thread_bytes: int = 0,
    max_thread_bytes: int | None = None,
    max_pixels: int | None = None,
) -> list[ImageRef]:
    """Check, decode and store images in one go (``check_images`` then ``store_images``)."""
    checked = check_images(encoded, max_images, max_bytes, max_pixels)
    return store_images(checked, store, owner, thread_bytes, max_thread_bytes)


class PixelBudget:
    """Pixels being decoded for each key on this instance, bounded per key.

    Used from the event loop only (taken before a decoding thread starts, given back after).
    """

    def __init__(self) -> None:
        self._taken: dict[str, int] = {}

    def take(self, key: str, pixels: int, most: int) -> bool:
        """Count ``pixels`` against ``key``; False (nothing counted) past ``most``."""
        taken = self._taken.get(key, 0)
        if taken and taken + pixels > most:
            return False
        self._taken[key] = taken + pixels
        return True

    def give(self, key: str, pixels: int) -> None:
        """Stop counting ``pixels`` of ``key``."""
        left = self._taken.get(key, 0) - pixels
        if left > 0:
            self._taken[key] = left
        else:
            self._taken.pop(key, None)


def owner_folder(store: Path, owner: str) -> Path:
    """Each user's images live apart: nobody can load another user's image by its hash."""
    return store / hashlib.sha256(owner.encode()).hexdigest()[:16]


def stored_bytes(store: Path, owner: str, refs: list[ImageRef]) -> int:
    """Bytes the images ``refs`` name take in ``owner``'s store, measured on disk.

    A thread's image quota is counted from the files the server wrote, never from the
    ``bytes`` a checkpoint says (a value a client could have written).
    """
    total = 0
    for digest in {str(ref.get("sha256", "")) for ref in refs}:
        if len(digest) == 64 and all(c in "0123456789abcdef" for c in digest):
            path = owner_folder(store, owner) / digest
            total += path.stat().st_size if path.is_file() else 0
    return total


def load_image(store: Path, owner: str, ref: ImageRef) -> bytes | None:
    """One of ``owner``'s stored images, or None."""
    digest = ref["sha256"]
    if len(digest) != 64 or not all(c in "0123456789abcdef" for c in digest):
        return None
    path = owner_folder(store, owner) / digest
    return path.read_bytes() if path.exists() else None
