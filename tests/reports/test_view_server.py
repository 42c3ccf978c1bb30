"""`evalfleet view`'s server (`reports.view_server`) on a thread, port 0, over a local store made
from the stored ZeroBench run (`tests/data/stored_runs`, aggregated, its report and the store
index written): store files served as stored (HTML pages with the view's marker and editor
added), `/` sent to the index, a missing file a plain 404 line, a `..` path and a link out of
the store refused; tags read and written through the JSON route only with the token, a bad
tag refused with the line `evalfleet tag` prints, and `{run}/tags.json` and the index after."""

from __future__ import annotations

import hashlib
import http.client
import json
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalfleet.cli.main import main
from evalfleet.core.types import ConfigError
from evalfleet.engine.scoring.aggregate import aggregate_run
from evalfleet.reports.report import write_report
from evalfleet.reports.store_index import INDEX_KEY, write_index
from evalfleet.reports.view_server import EDITOR, TOKEN_HEADER, ViewServer, parse_change
from evalfleet.storage import open_store

STORED = Path(__file__).resolve().parents[1] / "data" / "stored_runs" / "store"
RUN = "stored-zerobench"
SHOTS = Path(__file__).resolve().parents[1] / "output" / "view"
TOKEN = "test-token-0123456789"


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    runs = tmp_path_factory.mktemp("view") / "runs"
    shutil.copytree(STORED / RUN, runs / RUN)
    store = open_store(str(runs))
    aggregate_run(store, RUN)
    write_report(store, RUN, None)
    write_index(store)
    return runs


@pytest.fixture
def served(built, tmp_path) -> Iterator[tuple[Path, ViewServer]]:
    """A copy of the built store, served on a free port until the test ends."""
    root = tmp_path / "runs"
    shutil.copytree(built, root)
    server = ViewServer(open_store(str(root)), 0, token=TOKEN)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield root, server
    server.shutdown()
    server.server_close()
    thread.join()


def request(
    server: ViewServer, method: str, path: str, body: object = None, headers: dict | None = None
) -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    data = None if body is None else json.dumps(body).encode()
    connection.request(method, path, body=data, headers=headers or {})
    response = connection.getresponse()
    answer = (response.status, dict(response.getheaders()), response.read())
    connection.close()
    return answer


def digests(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def report_key(root: Path) -> str:
    (page,) = root.glob(f"{RUN}/results/*/report.html")
    return str(page.relative_to(root))


def without_editor(page: bytes, run: str) -> bytes:
    meta = f"<meta name='evalfleet-view' data-run='{run}'>".encode()
    script = f"<script>{EDITOR.read_text()}</script>".encode()
    assert page.count(meta) == 1 and page.count(script) == 1
    assert page.index(meta) == page.index(b"<head>") + len(b"<head>")
    assert page.index(script) > page.index(b"</head>")
    assert page.rindex(script) + len(script) == page.rindex(b"</body>")
    return page.replace(meta, b"").replace(script, b"")


def test_root_goes_to_the_index_and_pages_are_served_with_the_editor(served):
    root, server = served
    before = digests(root)
    status, headers, _ = request(server, "GET", f"/?token={TOKEN}")
    assert (status, headers["Location"]) == (302, f"/{INDEX_KEY}?token={TOKEN}")
    status, headers, page = request(server, "GET", f"/{INDEX_KEY}?token={TOKEN}")
    assert (status, headers["Content-Type"]) == (200, "text/html; charset=utf-8")
    assert without_editor(page, "") == (root / INDEX_KEY).read_bytes()
    key = report_key(root)
    status, _, page = request(server, "GET", "/" + key)
    assert status == 200
    assert without_editor(page, RUN) == (root / key).read_bytes()
    status, headers, data = request(server, "GET", f"/{RUN}/manifest.json")
    assert (status, headers["Content-Type"]) == (200, "application/json")
    assert data == (root / RUN / "manifest.json").read_bytes()  # not HTML: as stored
    assert digests(root) == before  # reading writes nothing


def test_a_missing_file_a_dotdot_path_and_a_link_out_of_the_store(served, tmp_path):
    root, server = served
    assert request(server, "GET", f"/{RUN}/nothing.html") == (
        404,
        request(server, "GET", f"/{RUN}/nothing.html")[1],
        f"not found: /{RUN}/nothing.html is not in the store\n".encode(),
    )
    (tmp_path / "secret.txt").write_text("outside")
    (root / "out.txt").symlink_to(tmp_path / "secret.txt")
    status, _, body = request(server, "GET", "/out.txt")
    assert (status, body) == (404, b"not found: /out.txt is not in the store\n")
    for path in ("/../secret.txt", f"/{RUN}/%2E%2E/%2E%2E/secret.txt", "/a//b"):
        status, _, body = request(server, "GET", path)
        assert status == 400, path
        assert body.decode().endswith("no empty, '.' or '..' part\n")
    status, _, _ = request(server, "GET", "/x", headers={"Host": "evil.example:80"})
    assert status == 403  # a name rebound to 127.0.0.1 reads nothing


def test_tags_are_written_only_with_the_token_by_the_rules_of_tag(served, capsys):
    root, server = served
    route = f"/api/runs/{RUN}/tags"
    before = digests(root)
    change = {"add": ["baseline"], "note": "first"}
    for headers in ({}, {TOKEN_HEADER: "wrong"}):
        status, _, body = request(server, "POST", route, change, headers)
        assert (status, json.loads(body)) == (
            403,
            {"error": "no or wrong token: open the URL `evalfleet view` printed"},
        )
    assert main(["tag", RUN, "--store", str(root), "--add", "two words"]) == 2
    said = capsys.readouterr().err
    status, _, body = request(server, "POST", route, {"add": ["two words"]}, {TOKEN_HEADER: TOKEN})
    assert (status, f"error: {json.loads(body)['error']}\n") == (400, said)
    status, _, body = request(server, "POST", route, {"add": "x"}, {TOKEN_HEADER: TOKEN})
    assert (status, json.loads(body)) == (400, {"error": "add must be a list of tags (strings)"})
    status, _, body = request(server, "POST", route, {"tag": []}, {TOKEN_HEADER: TOKEN})
    assert json.loads(body) == {
        "error": "unknown field 'tag': give add, remove, note, set or unset"
    }
    status, _, body = request(server, "POST", route, {"set": ["a"]}, {TOKEN_HEADER: TOKEN})
    assert (status, json.loads(body)) == (
        400,
        {"error": 'set must be an object of metadata, {"key": "value"} (strings)'},
    )
    status, _, body = request(server, "POST", route, {"unset": "a"}, {TOKEN_HEADER: TOKEN})
    assert json.loads(body) == {"error": "unset must be a list of metadata keys (strings)"}
    assert main(["tag", RUN, "--store", str(root), "--set", "a=x", "--unset", "a"]) == 2
    said = capsys.readouterr().err
    change_both = {"set": {"a": "x"}, "unset": ["a"]}
    status, _, body = request(server, "POST", route, change_both, {TOKEN_HEADER: TOKEN})
    assert (status, f"error: {json.loads(body)['error']}\n") == (400, said)
    status, _, body = request(server, "POST", route, {"set": {"a b": "x"}}, {TOKEN_HEADER: TOKEN})
    assert (status, json.loads(body)["error"]) == (
        400,
        "metadata key 'a b' is not 1 to 64 letters, digits, _ . or -: give a name such as `gpu` "
        "or `commit`",
    )
    headers = {TOKEN_HEADER: TOKEN, "Content-Length": "-1"}
    status, _, body = request(server, "POST", route, None, headers)
    assert (status, json.loads(body)) == (
        400,
        {"error": "Content-Length '-1': give the body's size, at most 65536 bytes"},
    )
    status, _, body = request(server, "POST", "/api/runs/zz/tags", change, {TOKEN_HEADER: TOKEN})
    assert (status, json.loads(body)) == (
        400,
        {"error": f"no run 'zz' in local directory {root}: `evalfleet runs` lists them"},
    )
    assert digests(root) == before  # nothing refused changed the store

    status, _, body = request(server, "POST", route, change, {TOKEN_HEADER: TOKEN})
    assert (status, json.loads(body)) == (
        200,
        {"run": RUN, "tags": ["baseline"], "note": "first", "metadata": {}},
    )
    change = {"add": ["gpu-a"], "remove": ["baseline"], "note": None, "set": {"gpu": "a=100"}}
    status, _, body = request(server, "POST", route, change, {TOKEN_HEADER: TOKEN})
    assert json.loads(body) == {
        "run": RUN,
        "tags": ["gpu-a"],
        "note": "first",
        "metadata": {"gpu": "a=100"},
    }
    stored = json.loads((root / RUN / "tags.json").read_text())
    assert stored == {"tags": ["gpu-a"], "note": "first", "metadata": {"gpu": "a=100"}}
    assert request(server, "GET", route)[2] == body
    assert (
        '<span class="tag">gpu-a</span><div class="metadata"><span class="meta">gpu=a=100</span>'
        '</div><div class="note">first</div>'
    ) in (root / INDEX_KEY).read_text()
    changed = {k for k in digests(root) if before.get(k) != digests(root)[k]}
    assert changed == {f"{RUN}/tags.json", INDEX_KEY}


TAGS = "return [...document.querySelectorAll(arguments[0] + ' .ev-tag')].map(e => e.textContent)"
METAS = TAGS.replace(".ev-tag", ".ev-meta")


@pytest.mark.slow  # a browser
def test_a_tag_added_in_the_index_is_stored_and_shown_in_the_report(served):
    """At 1400 x 1000 in Chromium, through `view`: the index's tags cell is an editor; a tag, a
    metadata pair and a note added there are in tags.json and the rewritten index after a
    reload, and the report (written before the tag) shows them in its About table, where ×
    removes the tag and the pair's value is changed. The same index opened as a file has no
    editor."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    from tests.support.browser import close, headless_chromium

    root, server = served
    driver = headless_chromium(1400, 1000)
    wait = WebDriverWait(driver, 20)
    cell = "#runs td.tags"
    try:
        driver.get(f"http://127.0.0.1:{server.port}/?token={TOKEN}")
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, f"{cell} .ev-edit"))
        assert driver.current_url == f"http://127.0.0.1:{server.port}/{INDEX_KEY}"  # no token
        driver.find_element(By.CSS_SELECTOR, f"{cell} .ev-edit").click()
        driver.find_element(By.CSS_SELECTOR, f"{cell} .ev-add").send_keys("from-view", Keys.ENTER)
        driver.find_element(By.CSS_SELECTOR, f"{cell} textarea").send_keys("seen in the page")
        driver.find_element(By.CSS_SELECTOR, f"{cell} .ev-new-key").send_keys("gpu")
        driver.find_element(By.CSS_SELECTOR, f"{cell} .ev-new-value").send_keys("a=100")
        driver.find_element(By.CSS_SELECTOR, f"{cell} .ev-save").click()
        wait.until(lambda d: not d.find_elements(By.CSS_SELECTOR, ".ev-editor"))
        stored = json.loads((root / RUN / "tags.json").read_text())
        assert stored == {
            "tags": ["from-view"],
            "note": "seen in the page",
            "metadata": {"gpu": "a=100"},
        }
        driver.refresh()
        wait.until(lambda d: d.execute_script(TAGS, cell) == ["from-view"])
        assert driver.execute_script(METAS, cell) == ["gpu=a=100"]
        note = driver.find_element(By.CSS_SELECTOR, f"{cell} .ev-note").text
        assert (note, driver.find_element(By.ID, "q").get_attribute("value")) == (
            "seen in the page",
            "",
        )
        SHOTS.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(SHOTS / "index-tags.png"))

        driver.find_element(By.CSS_SELECTOR, "#runs td.report a").click()
        wait.until(lambda d: d.execute_script("return window.__reportReady || false"))
        about = "table.identity td.ev-tags"
        wait.until(lambda d: d.execute_script(TAGS, about) == ["from-view"])
        rows = driver.execute_script(
            "return [...document.querySelectorAll('table.identity tr')].slice(0, 3)"
            ".map(r => r.cells[0].textContent)"
        )
        assert rows == ["run", "tags", "results version"]
        driver.execute_script("document.querySelector('#about details').open = true")
        driver.find_element(By.CSS_SELECTOR, f"{about} .ev-edit").click()
        driver.find_element(By.CSS_SELECTOR, f"{about} .ev-chips .ev-x").click()
        value = driver.find_element(By.CSS_SELECTOR, f"{about} .ev-value")
        value.clear()
        value.send_keys("h100")
        driver.find_element(By.CSS_SELECTOR, f"{about} .ev-save").click()
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, f"{about} .ev-edit"))  # saved
        assert (driver.execute_script(TAGS, about), driver.execute_script(METAS, about)) == (
            [],
            ["gpu=h100"],
        )
        stored = json.loads((root / RUN / "tags.json").read_text())
        assert stored == {"tags": [], "note": "seen in the page", "metadata": {"gpu": "h100"}}
        driver.save_screenshot(str(SHOTS / "report-tags.png"))

        driver.get((root / INDEX_KEY).as_uri())
        assert driver.find_elements(By.CSS_SELECTOR, ".ev-edit") == []
        assert driver.find_element(By.CSS_SELECTOR, f"{cell} .note").text == "seen in the page"
        assert driver.find_element(By.CSS_SELECTOR, f"{cell} .meta").text == "gpu=h100"
    finally:
        close(driver)


def test_a_body_that_is_not_json_is_named_in_one_line():
    with pytest.raises(ConfigError) as caught:
        parse_change(b'{"add": [')
    assert str(caught.value) == ("the request body is not JSON (Expecting value)")
    with pytest.raises(ConfigError) as caught:
        parse_change(b"\xff\xfe")
    assert str(caught.value).startswith("the request body is not JSON (")
    empty = {"add": [], "remove": [], "note": None, "set": {}, "unset": []}
    assert parse_change(b"") == empty
