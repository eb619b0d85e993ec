"""Snapshot N+1 of a generated Wikipedia, made from snapshot N the way a month changes enwiki, with the
ground truth of every change (``gen_wiki_dump.py --month``).

:class:`MonthPlan` is a page source like :class:`support.generator.pages.DumpPlan`: every page of N renders
the same bytes in N+1 unless the month changed it. The changes, drawn for a seed (:class:`MonthShape`):

* **edited** articles: 1 to 4 operations on their pieces (a real block inserted, a paragraph deleted, a
  paragraph rewritten, i.e. replaced by another real one of about its size, a block moved to another
  section); a new revision id and a time stamp in the new month;
* **new** articles (new page ids, past N's largest) and **deleted** ones;
* **renamed** articles (moves): same page id, a new title, and a new redirect page from the old title;
* **retargeted** redirects and **changed QIDs** (page_props).

Links in unchanged pages keep pointing at N's titles (a move leaves a redirect), as on the wiki. The truth
(``truth.jsonl``: one line per changed page, with each edit's operation, the piece's role and the sha1 of
the old and new piece text) is what ``bench_scale.py``'s incremental and remapping runs are checked against.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from typing import Any

import numpy as np

from support.generator.pages import (
    ARTICLE,
    REDIRECT,
    ArticleText,
    DumpPlan,
    RenderedPage,
    article_text,
    filled,
    page_stream,
    render_page,
)

OPERATIONS = ("insert", "delete", "rewrite", "move")


@dataclass(frozen=True, slots=True)
class MonthShape:
    """A month of enwiki, per article of N. New articles: ~14,000 a month for 6.8 M articles (Wikipedia:Size
    of Wikipedia, 2024), 0.2 %; the rest are rounded guesses at a month's share, stated as such: edited 3 %
    (the issue's "a few percent"), deleted 0.05 %, moved 0.1 %, redirects retargeted 0.5 % of redirects,
    QIDs changed 0.1 %."""

    edited: float = 0.03
    new: float = 0.002
    deleted: float = 0.0005
    renamed: float = 0.001
    retargeted: float = 0.005
    qid_changed: float = 0.001


def _sha1(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


class MonthPlan:
    """Every page of snapshot N+1 of ``base`` (snapshot N), and what changed."""

    def __init__(self, base: DumpPlan, *, seed: int = 1, shape: MonthShape | None = None) -> None:
        self.base, self.month_seed, self.shape = base, seed, shape or MonthShape()
        self.seed, self.base_date, self.pool = base.seed, base.base_date, base.pool  # for page_xml
        rng = np.random.default_rng([base.seed, base.articles, seed, 31])
        articles = np.flatnonzero(base.kinds == ARTICLE)
        counts = [round(len(articles) * share) for share in (self.shape.edited, self.shape.deleted)]
        counts.append(round(len(articles) * self.shape.renamed))
        chosen = rng.permutation(articles)
        edited, deleted, renamed = np.split(chosen[: sum(counts)], np.cumsum(counts)[:2])
        self.edited = set(edited.tolist())
        self.deleted = set(deleted.tolist())
        alive = chosen[sum(counts) :]
        self.qid_changed = set(alive[: round(len(articles) * self.shape.qid_changed)].tolist())
        redirects = np.flatnonzero(base.kinds == REDIRECT)
        plain = redirects[base.kinds[base.redirect_target[redirects]] != REDIRECT]
        retargeted = rng.permutation(plain)[: round(len(redirects) * self.shape.retargeted)]
        new_targets = rng.choice(alive, size=len(retargeted))
        self.retargeted = dict(zip(retargeted.tolist(), new_targets.tolist(), strict=True))
        # new pages: new articles and the redirects moves leave, numbered after N's pages, ids after N's
        first_new_title = 5 * len(base)  # past every title and red link N uses
        self.renamed = {page: first_new_title + i for i, page in enumerate(renamed.tolist())}
        new_articles = round(len(articles) * self.shape.new)
        new_kinds = [ARTICLE] * new_articles + [REDIRECT] * len(self.renamed)
        rng.shuffle(new_kinds)
        self.new_kinds = new_kinds
        gaps = rng.integers(1, 5, size=len(new_kinds))
        self.new_ids = (int(base.page_ids[-1]) + np.cumsum(gaps)).tolist()
        self.new_titles: list[int] = []
        moved = iter(self.renamed.items())
        self.move_redirects: dict[int, int] = {}  # new page number -> the moved page
        for index, kind in enumerate(new_kinds):
            number = len(base) + index
            if kind == REDIRECT:
                page, _ = next(moved)
                self.move_redirects[number] = page
                self.new_titles.append(int(base.title_numbers[page]))  # the old title
            else:
                self.new_titles.append(first_new_title + len(self.renamed) + index)

    # ------------------------------------------------------------------------------------ page source
    def __len__(self) -> int:
        return len(self.base) - len(self.deleted) + len(self.new_kinds)

    def order(self) -> list[int]:
        kept = [n for n in range(len(self.base)) if n not in self.deleted]
        return kept + list(range(len(self.base), len(self.base) + len(self.new_kinds)))

    def _is_new(self, page: int) -> bool:
        return page >= len(self.base)

    def kind(self, page: int) -> int:
        return self.new_kinds[page - len(self.base)] if self._is_new(page) else self.base.kind(page)

    def page_id(self, page: int) -> int:
        return self.new_ids[page - len(self.base)] if self._is_new(page) else self.base.page_id(page)

    def page_title(self, page: int) -> str:
        if self._is_new(page):
            return self.base.title_of_number(self.new_titles[page - len(self.base)])
        if page in self.renamed:
            return self.base.title_of_number(self.renamed[page])
        return self.base.title(page)

    def redirect_to(self, page: int) -> str | None:
        if page in self.move_redirects:
            return self.page_title(self.move_redirects[page])
        if page in self.retargeted:
            return self.base.title(self.retargeted[page])
        return None if self._is_new(page) else self.base.redirect_to(page)

    def qid(self, page: int) -> str | None:
        if self._is_new(page):
            return f"Q{self.page_id(page) * 13 + 7}" if self.kind(page) == ARTICLE else None
        qid = self.base.qid(page)
        if page in self.qid_changed:
            return f"Q{self.page_id(page) * 17 + 3}"
        return qid

    def render(self, page: int) -> RenderedPage:
        base = self.base
        if self._is_new(page):
            kind = self.kind(page)
            rendered = RenderedPage(self.page_id(page), 0, self.page_title(page), kind, "", edited=True)
            rng = random.Random(self.month_seed * 1_000_033 + page)
            if kind == REDIRECT:
                rendered.redirect_to = self.redirect_to(page)
                rendered.text = (
                    f"#REDIRECT [[{rendered.redirect_to}]]{rng.choice(base.pool.redirect_tails)}\n"
                )
            else:
                article = article_text(base, rng)
                rendered.text, rendered.links, rendered.categories = (
                    article.text,
                    article.links,
                    article.categories,
                )
            return rendered
        edited = None
        if page in self.edited:
            edited = article_text(base, page_stream(base, page))
            self.edit(page, edited)
        rendered = render_page(base, page, edited)
        rendered.title = self.page_title(page)
        if page in self.retargeted:
            old, new = base.redirect_to(page), self.redirect_to(page)
            rendered.text = rendered.text.replace(f"[[{old}]]", f"[[{new}]]", 1)
            rendered.redirect_to, rendered.edited = new, True
        rendered.edited = rendered.edited or edited is not None or page in self.renamed
        return rendered

    # ----------------------------------------------------------------------------------------- edits
    def edit(self, page: int, article: ArticleText) -> list[dict[str, Any]]:
        """Apply the page's month of edits to ``article`` (in place); what each operation did."""
        rng = random.Random(self.month_seed * 7_919 + page)
        pool, done = self.base.pool, []
        for _ in range(rng.randint(1, 4)):
            editable = [i for i, role in enumerate(article.roles) if role in ("lead", "block")]
            operation = rng.choice(OPERATIONS)
            if operation in ("delete", "move") and len(editable) < 2:
                operation = "insert"
            if operation == "insert":
                section = rng.choice(pool.sections)
                text, _ = filled(rng.choice(section.blocks), self.base, rng)
                at = rng.choice(editable) + 1
                article.pieces.insert(at, text)
                article.separators.insert(at, "\n\n")
                article.roles.insert(at, "block")
                done.append({"op": "insert", "at": at, "new_sha1": _sha1(text)})
            elif operation == "delete":
                at = rng.choice(editable[1:])  # the first lead paragraph stays
                old = article.pieces.pop(at)
                article.separators.pop(at)
                done.append({"op": "delete", "at": at, "role": article.roles.pop(at), "old_sha1": _sha1(old)})
            elif operation == "rewrite":
                at = rng.choice(editable)
                old = article.pieces[at]
                text, _ = filled(pool.lead_near(len(old)), self.base, rng)
                article.pieces[at] = text
                done.append({"op": "rewrite", "at": at, "role": article.roles[at], "old_sha1": _sha1(old),
                             "new_sha1": _sha1(text)})  # fmt: skip
            else:
                at = rng.choice(editable[1:])
                headings = [i for i, r in enumerate(article.roles) if r == "heading"]
                own = max((i for i in headings if i < at), default=None)
                others = [i for i in headings if i != own]
                if not others:  # no other section to move it to
                    continue
                text, role = article.pieces.pop(at), article.roles.pop(at)
                article.separators.pop(at)
                heading = rng.choice(others)
                to = heading + 1 if heading < at else heading  # right after it (indices past `at` moved up)
                article.pieces.insert(to, text)
                article.separators.insert(to, "\n\n")
                article.roles.insert(to, role)
                done.append({"op": "move", "from": at, "to": to, "role": role, "sha1": _sha1(text)})
        return done

    def truth(self) -> Any:
        """One record per page the month changed (page-id order), with what changed."""
        for page in self.order():
            if self._is_new(page):
                record = {"page_id": self.page_id(page), "title": self.page_title(page)}
                if page in self.move_redirects:
                    yield {**record, "change": "move_redirect", "to": self.redirect_to(page)}
                else:
                    yield {**record, "change": "new_article", "qid": self.qid(page)}
                continue
            changes: dict[str, Any] = {}
            if page in self.edited:
                article = article_text(self.base, page_stream(self.base, page))
                changes["edits"] = self.edit(page, article)
            if page in self.renamed:
                changes["renamed_from"] = self.base.title(page)
            if page in self.retargeted:
                changes["redirect"] = {"from": self.base.redirect_to(page), "to": self.redirect_to(page)}
            if page in self.qid_changed:
                changes["qid"] = {"from": self.base.qid(page), "to": self.qid(page)}
            if changes:
                yield {"page_id": self.page_id(page), "title": self.page_title(page), **changes}
        for page in sorted(self.deleted):
            yield {"page_id": self.base.page_id(page), "title": self.base.title(page), "change": "deleted"}
