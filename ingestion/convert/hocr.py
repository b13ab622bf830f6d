"""Tesseract's hOCR output as :class:`~ingestion.convert.pdf_lines.Line` objects (boxes
in PDF points, origin bottom-left), with a font size estimated from word heights: the
OCR path (ingestion/convert/ocr.py) then shares reading order, headings, furniture and
chunking with text-layer pages.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import numpy as np

from .pdf_lines import Line

_BAND_GAP = 2  # blank pixel rows that still belong to one band of ink (thin strokes)
_LINE_CLASSES = {"ocr_line", "ocr_caption", "ocr_header", "ocr_textfloat"}
_BBOX = re.compile(r"bbox (\d+) (\d+) (\d+) (\d+)")
# Letters by vertical extent, for the size estimate: a word of tall letters without
# descenders spans the cap height (~0.7 em), with descenders ~0.93 em, x-height letters ~0.47 em.
_TALL = set("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789bdfhkl")
_DESCENDING = set("gjpqy,;()[]{}|/Q")
_SHORT = set("acemnorsuvwxz")


def ink_rows(pixels: np.ndarray, box: tuple[int, int, int, int]) -> tuple[int, int]:
    """The rows (top, bottom) of the main band of ink inside a word's box: a box that
    also took in specks, a logo or part of the next line (bands apart by blank rows)
    keeps the band with the most ink. The box itself when there is no ink in it."""
    left, top, right, bottom = box
    dark = (pixels[top:bottom, left:right] < 128).sum(axis=1)
    bands: list[list[int]] = []  # [first row, last row, ink]
    for row, ink in enumerate(dark):
        if not ink:
            continue
        if bands and row - bands[-1][1] <= _BAND_GAP:
            bands[-1][1] = row
            bands[-1][2] += int(ink)
        else:
            bands.append([row, row, int(ink)])
    if not bands:
        return top, bottom
    first, last, _ = max(bands, key=lambda band: band[2])
    return top + first, top + last + 1


def _estimate_size(words: list[tuple[str, tuple[int, int, int, int]]], scale: float) -> float:
    """Font size in points from word heights: per word, its height over the share of an em
    its letters span (caps/ascenders 0.7, with descenders 0.93, x-height 0.47); the lower
    quartile, because specks of a scan joined to a word only ever make it taller."""
    estimates = []
    for text, (_, top, _, bottom) in words:
        letters = [ch for ch in text if ch.isalnum() or ch in _DESCENDING]
        if not letters:
            continue
        tall = any(ch in _TALL for ch in letters)
        low = any(ch in _DESCENDING for ch in letters)
        if not tall and not low and not all(ch in _SHORT for ch in letters):
            continue  # accents, unusual glyphs: no reliable extent
        share = 0.93 if tall and low else 0.7 if tall else 0.72 if low else 0.47
        estimates.append((bottom - top) / scale / share)
    if not estimates:
        return 1.0
    estimates.sort()
    return max(round(estimates[len(estimates) // 4] * 2) / 2, 1.0)


def _line(words: list[tuple[str, tuple[int, int, int, int]]], page: int, scale: float, height: float) -> Line:
    size = _estimate_size(words, scale)
    x0 = min(b[0] for _, b in words) / scale
    x1 = max(b[2] for _, b in words) / scale
    top = min(b[1] for _, b in words) / scale
    bottom = max(b[3] for _, b in words) / scale
    text = " ".join(w for w, _ in words)
    return Line(page, x0, height - bottom, x1, height - top, size=size, bold=False, text=text, estimated=True, ocr=True)


def hocr_lines(
    hocr: str, page: int, scale: float, pixels: np.ndarray | None = None
) -> tuple[list[Line], float, float]:
    """Lines of one page's hOCR (pixel boxes at ``scale`` pixels per point) as
    :class:`Line` objects, and the page height and width in points. With the page's ``pixels``,
    each word's height is its main band of ink (:func:`ink_rows`).

    A hOCR line is split where two words are further apart than 1.5 x its size (a column
    gutter), as text-layer lines are; lines without a letter or digit (speckles) are dropped.
    """
    root = ET.fromstring(hocr.encode("utf-8"))
    height = width = 0.0
    lines: list[Line] = []
    for element in root.iter():
        cls = element.get("class", "")
        if cls == "ocr_page":
            match = _BBOX.search(element.get("title", ""))
            if match:
                width, height = int(match.group(3)) / scale, int(match.group(4)) / scale
        if cls not in _LINE_CLASSES:
            continue
        words = []
        for word in element.iter():
            if word.get("class") != "ocrx_word":
                continue
            text = "".join(word.itertext()).strip()
            match = _BBOX.search(word.get("title", ""))
            if text and match:
                left, top, right, bottom = (int(v) for v in match.groups())
                if pixels is not None:
                    top, bottom = ink_rows(pixels, (left, top, right, bottom))
                words.append((text, (left, top, right, bottom)))
        if not words:
            continue
        size = _estimate_size(words, scale)
        run = [words[0]]
        for word in words[1:]:
            if (word[1][0] - run[-1][1][2]) / scale > 1.5 * size:
                lines.append(_line(run, page, scale, height))
                run = []
            run.append(word)
        lines.append(_line(run, page, scale, height))
    return [line for line in lines if any(ch.isalnum() for ch in line.text)], height, width
