"""The sandbox's view of git's object store when read_deny hides blobs in it (filtered_store.py): the
filtered objects directory over `<common dir>/objects`, and a refs directory holding the replace refs
over `<common dir>/refs`, each real entry of refs/ bound back into it. All read-only; they come after
mounts.py's git directories, which they cover. The real packs and loose objects are then at no path
inside: a bind covers the directory at its one path, and the filtered store has no alternates."""

from __future__ import annotations

import os

from gitbot.sandbox.filtered_store import StoreView


def store_arguments(view: StoreView | None) -> list[str]:
    if view is None:
        return []
    objects = os.path.join(view.common_dir, "objects")
    refs = os.path.join(view.common_dir, "refs")
    args = ["--ro-bind", view.objects, objects]
    if os.path.isdir(refs) and not os.path.islink(refs):
        args += ["--ro-bind", view.refs, refs]
        for name in sorted(os.listdir(refs)):
            if name != "replace" and os.path.lexists(os.path.join(view.refs, name)):
                args += ["--ro-bind", os.path.join(refs, name), os.path.join(refs, name)]
    if view.index is not None:
        args += ["--ro-bind", *view.index]
    return args
