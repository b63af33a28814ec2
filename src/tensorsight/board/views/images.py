"""The images view: image records per tag and their encoded bytes.

``GET /list`` gives metadata per record (position ``i``, step, size, format);
``GET /image?run&tag&i`` returns the bytes with the image's media type. Only image media
types are served; anything else goes out as ``application/octet-stream`` with ``nosniff``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tensorsight.board.errors import NotFound
from tensorsight.board.views.base import (
    View,
    int_param,
    lookup,
    offload,
    offload_json,
    require_param,
)

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import BaseRoute

    from tensorsight.data import DataProvider

__all__ = ["ImagesView", "image_impl", "list_impl"]

SAFE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp", "image/bmp"})


def list_impl(provider: DataProvider, run: str, tag: str) -> dict[str, Any]:
    """Metadata of every image record of one tag, in step order."""
    lookup(provider, "images", run, tag)
    records = provider.read_records(run, "images", tag)
    return {
        "run": run,
        "tag": tag,
        "images": [
            {
                "i": i,
                "step": r.step,
                "wall_time": r.wall_time,
                "index": r.index,
                "width": r.width,
                "height": r.height,
                "mime_type": r.mime_type,
            }
            for i, r in enumerate(records)
        ],
    }


def image_impl(provider: DataProvider, run: str, tag: str, i: int) -> tuple[bytes, str]:
    """The encoded bytes of record ``i`` and the media type to send them with."""
    lookup(provider, "images", run, tag)
    records = provider.read_records(run, "images", tag)
    if not 0 <= i < len(records):
        msg = f"Image tag {tag[:200]!r} has {len(records)} records; there is no record {i}."
        raise NotFound(msg)
    record = records[i]
    media = record.mime_type if record.mime_type in SAFE_TYPES else "application/octet-stream"
    return record.data, media


class ImagesView(View):
    """Images per tag with a step slider, brightness/contrast and actual size."""

    name = "images"
    title = "Images"
    kind = "images"

    def routes(self) -> Sequence[BaseRoute]:
        from starlette.routing import Route

        return [
            Route("/tags", self._tags),
            Route("/list", self._list),
            Route("/image", self._image),
        ]

    async def _list(self, request: Request) -> Response:
        run, tag = require_param(request, "run"), require_param(request, "tag")
        return await offload_json(request, list_impl, self.provider, run, tag)

    async def _image(self, request: Request) -> Response:
        from starlette.responses import Response

        run, tag = require_param(request, "run"), require_param(request, "tag")
        data, media = await offload(
            request, image_impl, self.provider, run, tag, int_param(request, "i", 0, 0, 10**9)
        )
        return Response(data, media_type=media, headers={"Cache-Control": "max-age=3600"})
