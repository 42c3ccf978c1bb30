"""A small synthetic ZeroBench-format dataset with answers that follow from its drawings.

Four main questions (shape counting, a grid maze, a bar chart, two dot panels), each with two
or three subquestions. Images are drawn with Pillow from the same specifications the answers
are computed from, and no text is rendered, so the bytes depend on no font.
"""

from __future__ import annotations

import io
from collections import deque
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw

from evalfleet.benchmarks import hub

WHITE = (255, 255, 255)
BLACK = (0, 0, 0)
RGB = {
    "red": (220, 30, 30),
    "green": (30, 160, 60),
    "blue": (30, 80, 220),
    "orange": (245, 150, 20),
    "grey": (200, 200, 200),
}
ATTRIBUTION = "synthetic image drawn by evalfleet benchmarks.demo_data"

# (kind, colour, centre x, centre y); radius 18 px
SHAPES = [
    ("circle", "red", 40, 40),
    ("circle", "red", 200, 60),
    ("circle", "red", 120, 190),
    ("square", "blue", 120, 50),
    ("square", "blue", 270, 180),
    ("triangle", "green", 280, 40),
    ("triangle", "green", 40, 130),
    ("triangle", "green", 190, 130),
    ("triangle", "green", 40, 200),
]

# S start (green), G goal (red), # wall (black), . free (white)
MAZE = (
    "S.#...",
    "#.#.#.",
    "#...#.",
    "####..",
    "...#.#",
    ".#...G",
)
MOVES = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}

BARS = [("red", 7), ("green", 3), ("blue", 9), ("orange", 5)]

# dot centres of the two panels
DOTS = (
    [(30, 30), (90, 40), (60, 90), (120, 110), (30, 130)],
    [(25, 25), (75, 25), (125, 25), (50, 80), (100, 80), (25, 130), (125, 130)],
)


def _png(img: Image.Image) -> bytes:
    out = io.BytesIO()
    img.save(out, format="PNG")
    return out.getvalue()


def draw_shapes() -> bytes:
    img = Image.new("RGB", (320, 240), WHITE)
    draw = ImageDraw.Draw(img)
    r = 18
    for kind, colour, x, y in SHAPES:
        fill = RGB[colour]
        if kind == "circle":
            draw.ellipse((x - r, y - r, x + r, y + r), fill=fill)
        elif kind == "square":
            draw.rectangle((x - r, y - r, x + r, y + r), fill=fill)
        else:
            draw.polygon([(x, y - r), (x + r, y + r), (x - r, y + r)], fill=fill)
    return _png(img)


def draw_maze(cell: int = 40) -> bytes:
    rows, cols = len(MAZE), len(MAZE[0])
    img = Image.new("RGB", (cols * cell + 1, rows * cell + 1), WHITE)
    draw = ImageDraw.Draw(img)
    colours = {"#": BLACK, "S": RGB["green"], "G": RGB["red"], ".": WHITE}
    for r, line in enumerate(MAZE):
        for c, ch in enumerate(line):
            box = (c * cell, r * cell, (c + 1) * cell, (r + 1) * cell)
            draw.rectangle(box, fill=colours[ch], outline=RGB["grey"])
    return _png(img)


def draw_bars(unit: int = 20) -> bytes:
    width, base = 260, 220
    img = Image.new("RGB", (width, 240), WHITE)
    draw = ImageDraw.Draw(img)
    for level in range(0, 11):
        y = base - level * unit
        draw.line((10, y, width - 10, y), fill=RGB["grey"] if level else BLACK)
    for i, (colour, height) in enumerate(BARS):
        x = 30 + i * 55
        draw.rectangle((x, base - height * unit, x + 35, base), fill=RGB[colour])
    return _png(img)


def draw_dots(centres: list[tuple[int, int]]) -> bytes:
    img = Image.new("RGB", (160, 160), WHITE)
    draw = ImageDraw.Draw(img)
    for x, y in centres:
        draw.ellipse((x - 10, y - 10, x + 10, y + 10), fill=BLACK)
    return _png(img)


def shortest_path(maze: tuple[str, ...]) -> list[str]:
    """The moves of the unique shortest path from S to G (raises if it is not unique)."""
    cells = {(r, c): ch for r, line in enumerate(maze) for c, ch in enumerate(line)}
    start = next(p for p, ch in cells.items() if ch == "S")
    goal = next(p for p, ch in cells.items() if ch == "G")
    dist = {start: 0}
    ways = {start: 1}
    came_from: dict[tuple[int, int], tuple[tuple[int, int], str]] = {}
    queue = deque([start])
    while queue:
        here = queue.popleft()
        for name, (dr, dc) in MOVES.items():
            there = (here[0] + dr, here[1] + dc)
            if cells.get(there, "#") == "#":
                continue
            if there not in dist:
                dist[there] = dist[here] + 1
                ways[there] = ways[here]
                came_from[there] = (here, name)
                queue.append(there)
            elif dist[there] == dist[here] + 1:
                ways[there] += ways[here]
    if ways.get(goal) != 1:
        raise ValueError("the demo maze must have exactly one shortest path")
    moves: list[str] = []
    node = goal
    while node != start:
        node, name = came_from[node]
        moves.append(name)
    return moves[::-1]


def demo_questions() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Rows of the main and subquestion splits, in the upstream schema."""
    shapes, maze, bars = draw_shapes(), draw_maze(), draw_bars()
    dots = [draw_dots(d) for d in DOTS]
    count = {
        kind: sum(1 for k, _, _, _ in SHAPES if k == kind)
        for kind in ("circle", "square", "triangle")
    }
    path = shortest_path(MAZE)
    walls = sum(line.count("#") for line in MAZE)
    heights = dict(BARS)
    tallest, shortest = max(heights.values()), min(heights.values())
    n_dots = [len(d) for d in DOTS]

    def images(qid: str, *data: bytes) -> dict[str, Any]:
        names = [f"images/{qid}_{i}.png" for i in range(len(data))]
        return {
            "question_images_decoded": [
                {"bytes": d, "path": n} for n, d in zip(names, data, strict=True)
            ],
            "question_images": names,
        }

    maze_rules = (
        "The image shows a maze on a grid. Black cells are walls; you move one cell at a time "
        "up, down, left or right through the other cells."
    )
    bar_rules = (
        "The bar chart has a horizontal grid line at every unit, from 0 at the black base line."
    )
    groups: list[tuple[str, str, str, dict[str, Any], list[tuple[str, str]]]] = [
        (
            "1",
            "Count the red circles, the blue squares and the green triangles in the image. "
            "What is the product of the three counts?",
            str(count["circle"] * count["square"] * count["triangle"]),
            images("1", shapes),
            [
                ("How many red circles are in the image?", str(count["circle"])),
                ("How many blue squares are in the image?", str(count["square"])),
                ("How many green triangles are in the image?", str(count["triangle"])),
            ],
        ),
        (
            "2",
            f"{maze_rules} List the moves of the shortest path from the green cell to the red "
            "cell, separated by commas (for example: up, left, left).",
            ", ".join(path),
            images("2", maze),
            [
                ("How many black wall cells does the grid contain?", str(walls)),
                (
                    f"{maze_rules} How many moves does the shortest path from the green cell "
                    "to the red cell take?",
                    str(len(path)),
                ),
                (
                    f"{maze_rules} What is the first move of the shortest path from the green "
                    "cell to the red cell?",
                    path[0],
                ),
            ],
        ),
        (
            "3",
            f"{bar_rules} What is the sum of the heights of the tallest and the shortest bar?",
            str(tallest + shortest),
            images("3", bars),
            [
                (f"{bar_rules} What is the height of the blue bar?", str(heights["blue"])),
                (
                    "What is the colour of the shortest bar?",
                    next(c for c, h in BARS if h == shortest),
                ),
            ],
        ),
        (
            "4",
            "How many black dots are there in the two images together?",
            str(sum(n_dots)),
            images("4", *dots),
            [
                ("How many black dots are in the first image?", str(n_dots[0])),
                ("How many black dots are in the second image?", str(n_dots[1])),
                (
                    "Which image has more black dots? Answer first or second.",
                    "first" if n_dots[0] > n_dots[1] else "second",
                ),
            ],
        ),
    ]
    main: list[dict[str, Any]] = []
    subs: list[dict[str, Any]] = []
    for qid, text, answer, imgs, subquestions in groups:
        main.append(_row(qid, text, answer, imgs))
        for i, (sub_text, sub_answer) in enumerate(subquestions, start=1):
            subs.append(_row(f"{qid}_{i}", sub_text, sub_answer, imgs))
    return main, subs


def _row(qid: str, text: str, answer: str, imgs: dict[str, Any]) -> dict[str, Any]:
    return {
        "question_id": qid,
        "question_text": text,
        **imgs,
        "question_answer": answer,
        "image_attribution": ATTRIBUTION,
    }


def write_demo_dataset(path: str | Path) -> Path:
    """Save both splits with `DatasetDict.save_to_disk` at `path` and return it.

    The output is byte-identical on every call. An existing saved DatasetDict at `path` is
    replaced; any other non-empty directory is left alone and raises FileExistsError.
    """
    from datasets import Dataset, DatasetDict

    from evalfleet.benchmarks.zerobench.dataset import upstream_features

    target = hub.replace_saved(path)
    features = upstream_features()
    main, subs = demo_questions()
    splits = {
        name: Dataset.from_list(rows, features=features)
        for name, rows in (("zerobench", main), ("zerobench_subquestions", subs))
    }
    DatasetDict(splits).save_to_disk(str(target))
    return target
