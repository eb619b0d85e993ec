"""The pages of a generated Wikipedia: which page is what (:class:`DumpPlan`) and its XML
(:func:`render_page`), each a pure function of the seed, the article count and the page's number.

A plan fixes, for every page in page-id order: its kind (article, disambiguation page, redirect, or a
page of another namespace), its id and its title; for redirects, their target; for articles, their rank
of popularity, which decides how often other pages link to them (see
:class:`support.generator.shape.Shape`).
A page's content is drawn from its own random stream (seeded by the dump's seed and the page's number),
so any page can be rendered alone, in any process, and comes out the same.
"""

from __future__ import annotations

import hashlib
import html
import random
from bisect import bisect
from dataclasses import dataclass
from datetime import date, timedelta

import numpy as np

from support.generator.shape import Block, Section, Shape, TextPool

ARTICLE, DISAMBIGUATION, REDIRECT = 0, 1, 2  # kinds; 3 + i: the i-th of Shape.other_namespaces
_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"


@dataclass(slots=True)
class RenderedPage:
    page_id: int
    namespace: int
    title: str
    kind: int
    text: str
    redirect_to: str | None = None
    links: int = 0  # main-namespace links written into the text
    categories: int = 0
    edited: bool = False  # a later snapshot's new revision (month_of_edits.py)


class DumpPlan:
    """Every page of a generated dump of ``articles`` articles (disambiguation pages included)."""

    def __init__(self, pool: TextPool, articles: int, *, seed: int = 0, shape: Shape | None = None) -> None:
        self.pool, self.articles, self.seed, self.shape = pool, articles, seed, shape or Shape()
        shape = self.shape
        rng = np.random.default_rng([seed, articles])
        disambiguations = round(articles * shape.disambiguation_share)
        counts = [articles - disambiguations, disambiguations, round(articles * shape.redirects_per_article)]
        counts += [round(articles * share) for _, _, share in shape.other_namespaces]
        kinds = np.repeat(np.arange(len(counts), dtype=np.int8), counts)
        rng.shuffle(kinds)
        self.kinds = kinds
        self.page_ids = np.cumsum(rng.integers(1, 5, size=len(kinds), dtype=np.int64)) + 9
        self.title_numbers = rng.permutation(len(kinds)).astype(np.int64)
        stock = len(pool.titles)
        if 6 * len(kinds) > stock * stock:  # titles, red links (up to 5 x pages), a later month's new titles
            raise ValueError(f"{len(kinds):,} pages need more titles than {stock:,}^2 pairs of real names")
        # popularity: articles (and disambiguation pages) in rank order; link targets ~ 1 / rank^exponent
        linkable = np.flatnonzero(kinds <= DISAMBIGUATION)
        self.by_rank = rng.permutation(linkable).tolist()
        weights = 1.0 / np.arange(1, len(linkable) + 1, dtype=np.float64) ** shape.link_exponent
        self.rank_cdf = (np.cumsum(weights) / weights.sum()).tolist()
        # redirects: targets drawn by popularity; a few point at an earlier plain redirect (chains)
        redirect_pages = np.flatnonzero(kinds == REDIRECT)
        draws = np.searchsorted(np.asarray(self.rank_cdf), rng.random(len(redirect_pages)), side="right")
        targets = np.asarray(self.by_rank, dtype=np.int64)[np.minimum(draws, len(linkable) - 1)]
        chained = rng.random(len(redirect_pages)) < shape.redirect_chain_share
        chained[0] = False
        earlier = (rng.random(len(redirect_pages)) * np.arange(len(redirect_pages))).astype(np.int64)
        plain = ~chained
        earlier_plain = np.maximum.accumulate(np.where(plain, np.arange(len(redirect_pages)), 0))
        targets = np.where(chained, redirect_pages[earlier_plain[earlier]], targets)
        self.redirect_target = np.full(len(kinds), -1, dtype=np.int64)
        self.redirect_target[redirect_pages] = targets
        # a redirect to link through, per article that has one (the last plain redirect drawn to it)
        self.redirect_of = np.full(len(kinds), -1, dtype=np.int64)
        self.redirect_of[targets[plain]] = redirect_pages[plain]
        categories = np.flatnonzero(kinds == 3 + _namespace_index(shape, 14))
        self.category_pages = rng.permutation(categories).tolist()
        weights = 1.0 / np.arange(1, max(1, len(categories)) + 1, dtype=np.float64)
        self.category_cdf = (np.cumsum(weights) / weights.sum()).tolist()
        self.base_date = date(2026, 1, 1)

    def __len__(self) -> int:
        return len(self.kinds)

    # ------------------------------------------------------------------------------------------ titles
    def title_of_number(self, number: int) -> str:
        titles = self.pool.titles
        if number < len(titles):
            return titles[number]
        # a pair of real names, spread so that no name heads most of the pairs (one-to-one below stock^2)
        rest = number - len(titles)
        first, second = rest % len(titles), (rest // len(titles) + rest) % len(titles)
        return f"{titles[first]} ({titles[second]})"

    def title(self, page: int) -> str:
        """The title of page number ``page`` (its namespace prefix included)."""
        kind = int(self.kinds[page])
        title = self.title_of_number(int(self.title_numbers[page]))
        if kind == DISAMBIGUATION:
            return f"{title} (disambiguation)"
        if kind > REDIRECT:
            return f"{self.shape.other_namespaces[kind - 3][1]}:{title}"
        return title

    def namespace(self, page: int) -> int:
        kind = int(self.kinds[page])
        return self.shape.other_namespaces[kind - 3][0] if kind > REDIRECT else 0

    # ------------------------------------------------------------------------------------------- links
    def link_target(self, rng: random.Random) -> str:
        """A link's target: an article by popularity, sometimes through a redirect, sometimes red."""
        draw = rng.random()
        if draw < self.shape.red_link_share:  # a title no page has: numbers past the last page's
            return self.title_of_number(len(self) + rng.randrange(len(self) * 4))
        article = self.by_rank[min(bisect(self.rank_cdf, rng.random()), len(self.by_rank) - 1)]
        if draw < self.shape.red_link_share + self.shape.link_via_redirect and self.redirect_of[article] >= 0:
            return self.title(int(self.redirect_of[article]))
        return self.title(article)

    # -------------------------------------------------------- the page source gen_wiki_dump.py writes
    def order(self) -> list[int]:
        """Page numbers in page-id order (the dump's order)."""
        return list(range(len(self)))

    def kind(self, page: int) -> int:
        return int(self.kinds[page])

    def page_id(self, page: int) -> int:
        return int(self.page_ids[page])

    def page_title(self, page: int) -> str:
        """The title the page has in this snapshot (a later one may have moved it)."""
        return self.title(page)

    def redirect_to(self, page: int) -> str | None:
        target = int(self.redirect_target[page])
        return self.title(target) if target >= 0 else None

    def qid(self, page: int) -> str | None:
        """The page's Wikidata item: 97 % of articles, every disambiguation page, half the other pages."""
        kind, page_id = int(self.kinds[page]), int(self.page_ids[page])
        has_item = (
            kind == DISAMBIGUATION
            or (kind == ARTICLE and page_id % 100 < 97)
            or (kind > REDIRECT and page_id % 2)
        )
        return f"Q{page_id * 13 + 7}" if has_item else None

    def render(self, page: int) -> RenderedPage:
        return render_page(self, page)

    def category_name(self, rng: random.Random) -> str:
        page = self.category_pages[min(bisect(self.category_cdf, rng.random()), len(self.category_pages) - 1)]
        return self.title(page).split(":", 1)[1]


def _namespace_index(shape: Shape, namespace: int) -> int:
    return next(i for i, (ns, _, _) in enumerate(shape.other_namespaces) if ns == namespace)


# --------------------------------------------------------------------------------------------- content
def _fill(block: Block, plan: DumpPlan, rng: random.Random, out: list[str]) -> int:
    """Append ``block`` with its links pointed at generated titles; the number of links."""
    texts = block.texts
    out.append(texts[0])
    for (display, trail), text in zip(block.slots, texts[1:], strict=True):
        out.append(f"[[{plan.link_target(rng)}|{display}]]{trail}")
        out.append(text)
    return len(block.slots)


def _section_blocks(section: Section, budget: int) -> list[Block]:
    """The section's blocks that fit in ``budget`` bytes, from the first (at least one)."""
    taken, used = [], len(section.heading)
    for block in section.blocks:
        if taken and used + block.size > budget:
            break
        taken.append(block)
        used += block.size
    return taken


@dataclass(slots=True)
class ArticleText:
    """An article as its pieces, each with the separator written before it and its role: ``template``
    (hatnotes, the infobox), ``lead``, ``heading``, ``block`` (a section's paragraph, list or table) and
    ``categories`` (the last piece). A month of edits changes pieces (``month_of_edits.py``)."""

    pieces: list[str]
    separators: list[str]
    roles: list[str]
    links: int = 0
    categories: int = 0

    @property
    def text(self) -> str:
        return "".join(s + p for s, p in zip(self.separators, self.pieces, strict=True)).strip() + "\n"


def filled(block: Block, plan: DumpPlan, rng: random.Random) -> tuple[str, int]:
    """``block`` with its links pointed at generated titles; its number of links."""
    out: list[str] = []
    links = _fill(block, plan, rng, out)
    return "".join(out), links


def article_text(plan: DumpPlan, rng: random.Random) -> ArticleText:
    """An article's wikitext (real blocks up to a size drawn from the shape's distribution). Every piece
    counts against the size: templates, infobox, lead, sections, end section, categories."""
    pool, shape = plan.pool, plan.shape
    target = shape.article_bytes(rng.gauss(0.0, 1.0))
    article = ArticleText([], [], [])
    size = 0

    def add(block: Block | str, role: str, separator: str) -> None:
        """Append a piece; ``size`` counts what was written (links grow when pointed at new titles)."""
        nonlocal size
        text, links = (block, 0) if isinstance(block, str) else filled(block, plan, rng)
        article.pieces.append(text)
        article.separators.append(separator)
        article.roles.append(role)
        article.links += links
        size += len(separator) + len(text)

    def add_section(heading: str, blocks: list[Block]) -> None:
        add(heading, "heading", "\n\n")
        for index, block in enumerate(blocks):
            add(block, "block", "\n\n" if index else "\n")

    article.categories = 1 + min(9, int(rng.expovariate(1 / 2.5)))
    size += article.categories * 40  # the category lines, written last
    if target > 600 and rng.random() < 0.5:  # hatnotes, protection and variety templates open many articles
        for block in rng.sample(pool.lead_templates, rng.randint(1, 2)):
            if size + block.size < target / 3:
                add(block, "template", "\n" if article.pieces else "")
    if target > 3000 and pool.infoboxes and rng.random() < shape.infobox_share:
        add(rng.choice(pool.infoboxes), "template", "\n" if article.pieces else "")
    lead = pool.lead_near(max(40, int((target - size) * rng.uniform(0.5, 0.9))))
    add(lead, "lead", "\n" if article.pieces else "")
    for block in rng.sample(pool.lead_paragraphs, rng.randint(0, 2)):
        if size + block.size <= target:
            add(block, "lead", "\n\n")
    misses = 0
    while size < target * 0.8 and misses < 4:
        section = rng.choice(pool.sections)
        blocks = _section_blocks(section, target - size)
        if sum(b.size for b in blocks) > 1.3 * (target - size):
            misses += 1
            continue
        add_section(section.heading, blocks)
    end = rng.choice(pool.end_sections)
    if size + len(end.heading) + end.blocks[0].size <= target:
        add_section(end.heading, _section_blocks(end, target - size - len(end.heading) - 3))
    article.separators.append("\n\n")
    article.pieces.append(
        "\n".join(f"[[Category:{plan.category_name(rng)}]]" for _ in range(article.categories))
    )
    article.roles.append("categories")
    return article


def page_stream(plan: DumpPlan, page: int) -> random.Random:
    """The random stream page number ``page``'s content is drawn from."""
    return random.Random(plan.seed * 1_000_003 + page)


def render_page(plan: DumpPlan, page: int, article: ArticleText | None = None) -> RenderedPage:
    """Page number ``page`` of the plan, its text drawn from its own random stream (an article: or
    ``article``, its pieces as a later month edited them)."""
    rng = page_stream(plan, page)
    kind = int(plan.kinds[page])
    rendered = RenderedPage(int(plan.page_ids[page]), plan.namespace(page), plan.title(page), kind, "")
    if kind == ARTICLE:
        article = article or article_text(plan, rng)
        rendered.text, rendered.links, rendered.categories = article.text, article.links, article.categories
    elif kind == DISAMBIGUATION:
        base = rendered.title.removesuffix(" (disambiguation)")
        entries = [plan.link_target(rng) for _ in range(rng.randint(2, 9))]
        lines = [f"'''{base}''' may refer to:", "", *(f"* [[{entry}]]" for entry in entries)]
        rendered.text = "\n".join([*lines, "", "{{disambiguation}}"]) + "\n"
        rendered.links = len(entries)
    elif kind == REDIRECT:
        rendered.redirect_to = plan.redirect_to(page)
        rendered.text = f"#REDIRECT [[{rendered.redirect_to}]]{rng.choice(plan.pool.redirect_tails)}\n"
    else:
        out: list[str] = []
        namespace = rendered.namespace
        if namespace == 10:
            _fill(rng.choice(plan.pool.lead_templates + plan.pool.infoboxes), plan, rng, out)
        elif namespace == 14:
            out.append(f"[[Category:{plan.category_name(rng)}]]")
        else:
            _fill(rng.choice(plan.pool.lead_paragraphs), plan, rng, out)
        rendered.text = "".join(out) + "\n"
    return rendered


def _base36_sha1(text: bytes) -> str:
    number = int.from_bytes(hashlib.sha1(text).digest(), "big")
    digits = []
    while number:
        number, digit = divmod(number, 36)
        digits.append(_BASE36[digit])
    return "".join(reversed(digits)).rjust(31, "0")


def page_xml(plan: DumpPlan, page: RenderedPage, number: int) -> str:
    """The ``<page>`` element as enwiki's dumps write it (revision, contributor, sha1 in base 36)."""
    rng = random.Random(plan.seed * 7_368_787 + number)
    text = page.text.encode("utf-8")
    revision = 1_300_000_000 + number * 3 + (2 if page.edited else 0)
    stamp = plan.base_date - timedelta(days=rng.randrange(4000))
    if page.edited:
        stamp = plan.base_date + timedelta(days=1 + rng.randrange(28))
    redirect = f'    <redirect title="{html.escape(page.redirect_to)}" />\n' if page.redirect_to else ""
    return (
        "  <page>\n"
        f"    <title>{html.escape(page.title, quote=False)}</title>\n"
        f"    <ns>{page.namespace}</ns>\n"
        f"    <id>{page.page_id}</id>\n"
        f"{redirect}"
        "    <revision>\n"
        f"      <id>{revision}</id>\n"
        f"      <parentid>{revision - 1 - rng.randrange(1000)}</parentid>\n"
        f"      <timestamp>{stamp.isoformat()}T{rng.randrange(24):02d}:{rng.randrange(60):02d}:00Z"
        "</timestamp>\n"
        "      <contributor>\n"
        f"        <username>{html.escape(rng.choice(plan.pool.contributors), quote=False)}</username>\n"
        f"        <id>{rng.randrange(1, 48_000_000)}</id>\n"
        "      </contributor>\n"
        "      <model>wikitext</model>\n"
        "      <format>text/x-wiki</format>\n"
        f'      <text bytes="{len(text)}" xml:space="preserve">{html.escape(page.text, quote=False)}</text>\n'
        f"      <sha1>{_base36_sha1(text)}</sha1>\n"
        "    </revision>\n"
        "  </page>\n"
    )
