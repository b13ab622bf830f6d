"""A DoclingDocument -> blocks under heading chains; DOCX through docling's simple pipeline.

The walk follows the body tree: section headers set the chain (their level, or the
depth of a ``2.1``-style number when docling gives every header level 1, as its PDF
pipeline does); paragraphs, list groups, tables, code and formulas become blocks;
pictures contribute only their captions (no ``<!-- image -->`` placeholder ever
reaches a chunk); page headers, footers and other furniture are skipped; inline groups
(runs of differently formatted text) become one paragraph. Each block carries the
boxes docling recorded for its items (``prov``: page and bounding box), as page
provenance (docs/ingestion.md, "Provenance").
"""

from __future__ import annotations

from pathlib import Path

from .base import Block, BlockCollector, ConversionError, ConvertedDocument, LineBox, table_text
from .docx_check import check_package, explain_failure
from .pdf_structure import numbering_level
from .textclean import SPACE_BEFORE_PUNCTUATION

_SKIPPED_LABELS = {"page_header", "page_footer", "marker", "empty_value"}
_CODE_LABELS = {"code", "formula"}
# docling boxes items, not lines: every part of the block's text is under all its boxes
_WHOLE_BLOCK = 1 << 30


class _Walker(BlockCollector):
    def __init__(self, document, title_in_chain: bool) -> None:
        super().__init__()
        self.document = document
        self.title_in_chain = title_in_chain
        self.title = ""
        self.item = None  # the item whose blocks are being added (for their boxes)

    def add(self, text: str, kind: str = "text") -> None:
        before = len(self.blocks)
        super().add(text, kind)
        if len(self.blocks) > before and self.item is not None:
            block = self.blocks[-1]
            self.blocks[-1] = Block(block.headings, block.text, block.kind, boxes=self.boxes(self.item))

    def boxes(self, item) -> tuple[LineBox, ...]:
        """The page boxes of ``item`` and its descendants, as fractions of their page."""
        out = []
        for node in [item, *self.descendants(item)]:
            for prov in getattr(node, "prov", None) or []:
                page = self.document.pages.get(prov.page_no)
                if page is None or not page.size.width or not page.size.height:
                    continue
                bbox = prov.bbox.to_top_left_origin(page_height=page.size.height)
                box = (bbox.l / page.size.width, bbox.t / page.size.height,
                       bbox.r / page.size.width, bbox.b / page.size.height)
                box = tuple(round(min(max(v, 0.0), 1.0), 4) for v in box)
                out.append(LineBox(0, _WHOLE_BLOCK, prov.page_no, box))
        return tuple(dict.fromkeys(out))

    def descendants(self, item):
        for child in self.children(item):
            yield child
            yield from self.descendants(child)

    def children(self, node):
        for ref in node.children or []:
            yield ref.resolve(self.document)

    def walk(self, node) -> None:
        for child in self.children(node):
            self.visit(child)

    def visit(self, item) -> None:
        from docling_core.types.doc import ContentLayer, GroupItem

        if getattr(item, "content_layer", ContentLayer.BODY) != ContentLayer.BODY:
            return
        self.item = item
        label = str(getattr(item.label, "value", item.label))
        if isinstance(item, GroupItem):
            if label == "inline":
                self.add(self.inline_text(item))
            elif label in ("list", "ordered_list"):
                self.add(self.list_text(item, 0), "list")
                for child in self.children(item):
                    if type(child).__name__ != "ListItem":
                        self.visit(child)  # docling nests a following table in the list
            else:
                self.walk(item)
            return
        if label in _SKIPPED_LABELS:
            return
        kind = type(item).__name__
        if kind == "TitleItem":
            self.title = self.title or item.text.strip()
            if self.title_in_chain:
                self.stack = [(0, item.text.strip())]
        elif kind == "SectionHeaderItem":
            level = numbering_level(item.text) or int(getattr(item, "level", 1) or 1)
            self.enter_heading(level, item.text.strip())
        elif kind == "PictureItem":
            self.add(item.caption_text(self.document))
            return  # the picture's own children are OCR'd fragments or captions already read
        elif kind == "TableItem":
            self.add(item.caption_text(self.document))
            captions, grid = self.table_rows(item)
            for caption in captions:
                self.add(caption)
            self.add(table_text(grid), "table")
            return
        elif label in _CODE_LABELS:
            self.add(getattr(item, "text", ""), "code")
        elif kind == "ListItem":
            self.add(f"- {item.text}", "list")
        elif hasattr(item, "text"):
            self.add(item.text)
        self.walk(item)

    def inline_text(self, group) -> str:
        parts = []
        for child in self.children(group):
            if hasattr(child, "text"):
                parts.append(child.text)
            elif child.children:
                parts.append(self.inline_text(child))
        return SPACE_BEFORE_PUNCTUATION.sub("", " ".join(p.strip() for p in parts if p.strip()))

    def list_text(self, group, depth: int) -> str:
        lines = []
        ordered = str(getattr(group.label, "value", group.label)) == "ordered_list"
        items = [child for child in self.children(group) if type(child).__name__ == "ListItem"]
        for number, child in enumerate(items, start=1):
            marker = f"{number}." if ordered else "-"
            text = getattr(child, "text", "") or ""
            nested = []
            for grandchild in self.children(child):
                label = str(getattr(grandchild.label, "value", grandchild.label))
                if label in ("list", "ordered_list"):
                    nested.append(self.list_text(grandchild, depth + 1))
                elif label == "inline":
                    text = f"{text} {self.inline_text(grandchild)}".strip()
            if text:
                lines.append("  " * depth + f"{marker} {text}")
            lines.extend(nested)
        return "\n".join(lines)

    def table_rows(self, table) -> tuple[list[str], list[list[str]]]:
        """A table's caption rows and its grid of cell texts, one cell per column.

        A merged cell's text is in the first row and column it covers, the other
        positions it covers are empty, so every row has the table's width (skipping them
        made a row narrower, and the Markdown table cut the cells of the wider rows). The
        rows on top that are one cell across the whole table (a title row, common in
        Word) are its caption, not its header.
        """
        grid = [
            [" ".join(cell.text.split()) if (cell.start_row_offset_idx, cell.start_col_offset_idx) == (r, c) else ""
             for c, cell in enumerate(row)]
            for r, row in enumerate(table.data.grid)
        ]
        top, cells = 0, table.data.grid
        while top < len(grid) - 1 and grid[top][0] and 1 < table.data.num_cols <= cells[top][0].col_span:
            top += 1
        return [row[0] for row in grid[:top]], grid[top:]

def docling_blocks(document, title_in_chain: bool = True) -> tuple[str, list[Block]]:
    """Title and blocks of a DoclingDocument.

    :param title_in_chain: the title item heads every chain (Word documents, like a
        Markdown H1) or is only the document title (papers: it is metadata).
    :returns: (title or "", blocks in document order).
    """
    walker = _Walker(document, title_in_chain)
    walker.walk(document.body)
    return walker.title, walker.blocks


def convert_docx(path: Path) -> ConvertedDocument:
    """Convert a Word file with docling's simple pipeline.

    :raises ConversionError: ``empty``; ``encrypted``; ``broken`` naming what is wrong
        (ingestion/convert/docx_check.py: not a ZIP package, a .doc file, another Office
        format, a damaged or malformed ``word/document.xml``).
    """
    path = Path(path)
    if path.stat().st_size == 0:
        raise ConversionError("empty", f"{path.name}: the file is empty")
    check_package(path)  # before docling loads its models
    from docling.datamodel.base_models import ConversionStatus
    from docling.document_converter import DocumentConverter

    try:
        result = DocumentConverter().convert(path, raises_on_error=False)
        failed = None if result.status in (ConversionStatus.SUCCESS, ConversionStatus.PARTIAL_SUCCESS) else (
            _line("; ".join(e.error_message for e in result.errors)) or result.status.value)
    except Exception as exc:  # docling wraps backend errors in several exception types
        failed = f"{type(exc).__name__}: {_line(str(exc))}"
    if failed is not None:
        reason = explain_failure(path) or f"docling could not read it ({failed})"
        raise ConversionError("broken", f"{path.name}: not a readable Word file: {reason}")
    title, blocks = docling_blocks(result.document, title_in_chain=True)
    return ConvertedDocument(blocks=blocks, title=title, converter="docling simple pipeline (DOCX)")


def _line(text: str) -> str:
    return (text.splitlines() or [""])[0][:200]
