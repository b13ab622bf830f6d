"""The admin's upload page and a job page following its job live, in a real browser
(tests/browser.py) against a real daphne: the page shows each file's outcome as the tasks
record it, then the final state, and stops polling."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import expect

from domains.models import Domain, Store
from ingestion.models import IngestionJob
from ingestion.outcomes import FileOutcome
from ingestion.runs.jobs import record, record_pages, start_file, start_job

from .browser import DESKTOP, PHONE, browser_page, screenshot
from .chat_world import PASSWORD, in_thread
from .live_daphne import LiveDaphne

pytestmark = pytest.mark.django_db
ENCRYPTED = "b.pdf: encrypted (a password is needed to open it)"
LAPTOP = {"width": 1366, "height": 768}


@pytest.fixture
def job(db):
    """A committed running job of three files, created by a staff user."""

    def create():
        user = User.objects.create_user("jobs-admin", password=PASSWORD, is_staff=True, is_superuser=True)
        store = Store.objects.create(name="live-store", domain=Domain.objects.create(name="live", description="Live"))
        return start_job("build", 3, {"directory": "/uploads/live-store"}, store=store, user=user)

    def remove():
        IngestionJob.objects.filter(store__name="live-store").delete()
        Domain.objects.filter(name="live").delete()
        User.objects.filter(username="jobs-admin").delete()

    try:
        yield in_thread(create)
    finally:
        in_thread(remove)


def test_the_job_page_follows_its_job_live_and_the_upload_page_uses_admin_rows(job, tmp_path):
    polls: list[str] = []
    with LiveDaphne(tmp_path / "daphne.log", KLEA_WARM_START="false") as server, browser_page() as page:
        page.on("request", lambda request: polls.append(request.url) if "/api/jobs/" in request.url else None)
        page.goto(f"{server.url}/admin/login/?next=/admin/ingestion/ingestionjob/{job.pk}/change/")
        page.fill("#id_username", "jobs-admin")
        page.fill("#id_password", PASSWORD)
        page.get_by_role("button", name="Log in").click()
        panel = page.locator(".klea-job-live")
        count, rows = panel.locator(".klea-job-count"), panel.locator("tbody tr")
        heading = page.locator("#content h2.klea-job-title")
        expect(count).to_have_text("0/3 (0%) running")
        expect(heading).to_have_text(f"build #{job.pk} (running, 0/3)")
        expect(rows).to_have_text(["3 more file(s)waiting"])

        in_thread(record, job.pk, FileOutcome("a.md", "stored", chunks=2))
        expect(count).to_have_text("1/3 (33%) running")
        # the heading follows the live count too (it said 0/3 while the bar said 1/3)
        expect(heading).to_have_text(f"build #{job.pk} (running, 1/3)")
        assert page.title().startswith(f"build #{job.pk} (running, 1/3) | ")
        expect(rows).to_have_text(["a.mdstored", "2 more file(s)waiting"])
        # a file that starts is named as in progress, not counted as waiting
        in_thread(start_file, job.pk, "b.pdf")
        expect(rows).to_have_text(["a.mdstored", "b.pdfin progress", "1 more file(s)waiting"])
        # the pages OCRed of a file in progress move the bar before its outcome
        in_thread(start_file, job.pk, "c.pdf")
        in_thread(record_pages, job.pk, "c.pdf", 15, 30)
        expect(count).to_have_text("1/3 (50%) running")
        # OCR progress goes beside the outcome, not in the Error column
        expect(rows).to_have_text(["a.mdstored", "b.pdfin progress", "c.pdfin progress (OCR page 15 of 30)"])
        expect(rows.nth(2).locator("td").nth(2)).to_have_text("")
        expect(panel.locator("progress")).to_have_attribute("value", "50")
        expect(panel.locator(".klea-job-messages li")).to_have_text(["c.pdf: OCR page 15 of 30"])
        in_thread(record, job.pk, FileOutcome("b.pdf", "failed", error=ENCRYPTED))
        in_thread(record, job.pk, FileOutcome("c.pdf", "stored", chunks=1), True)
        expect(count).to_have_text("3/3 (100%) succeeded with errors")
        # one state, one label: the bar, the heading and the breadcrumb agree
        expect(heading).to_have_text(f"build #{job.pk} (succeeded with errors, 3/3)")
        expect(page.locator(".breadcrumbs")).to_have_text(
            f"Home › Ingestion › Ingestion jobs › build #{job.pk} (succeeded with errors, 3/3)")
        expect(rows).to_have_text(["a.mdstored", f"b.pdffailed{ENCRYPTED}", "c.pdfstored"])
        expect(panel.locator(".klea-job-messages li")).to_have_text(["1 failed, 2 stored"])
        # one date format on the page: the server's words, filled in live or rendered
        finished = f"Finished {in_thread(lambda: IngestionJob.objects.get(pk=job.pk).finished_label)}"
        expect(panel.locator(".klea-job-finished")).to_have_text(finished)
        expect(panel.locator("progress")).to_have_attribute("value", "100")
        screenshot(page, "admin-job")
        seen = len(polls)
        page.wait_for_timeout(4000)  # more than two polling intervals: a finished job is not polled
        assert len(polls) == seen >= 2
        page.reload()  # rendered by the server: the same words
        expect(panel.locator(".klea-job-finished")).to_have_text(finished)
        # the job's arguments in words, not raw JSON
        expect(page.locator(".form-row.field-sources .readonly")).to_have_text("the folder /uploads/live-store")
        expect(page.locator(".form-row.field-run_by .readonly")).to_have_text("the command or script that started it")

        # the job list on a 1366 px laptop: every column shows beside the filter sidebar,
        # nothing is cut off or scrolled (the last one, "Finished at", was)
        page.set_viewport_size(LAPTOP)
        page.goto(f"{server.url}/admin/ingestion/ingestionjob/")
        expect(page.locator("#result_list thead th")).to_have_text(
            ["", "ID", "Kind", "Store", "Progress", "Errors", "Created by", "Created at", "Finished at"])
        results = page.locator("#changelist .results")
        screenshot(page, "admin-job-list")
        assert results.evaluate("node => [node.scrollWidth, node.clientWidth]") == results.evaluate(
            "node => [node.clientWidth, node.clientWidth]")
        box, sidebar = results.bounding_box(), page.locator("#changelist-filter").bounding_box()
        assert box["x"] + box["width"] <= sidebar["x"]
        page.set_viewport_size(DESKTOP)

        # the upload page: admin breadcrumbs and form rows, on a laptop and on a phone
        page.goto(f"{server.url}/admin/ingestion/ingestionjob/upload/")
        expect(page.locator(".breadcrumbs")).to_have_text("Home › Ingestion › Ingestion jobs › Upload documents")
        expect(page.locator("fieldset.module.aligned .form-row")).to_have_count(5)
        expect(page.locator("fieldset h2")).to_have_text(["Options"])
        expect(page.get_by_label("Files:")).to_be_visible()
        screenshot(page, "admin-upload")
        page.set_viewport_size(PHONE)
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
        screenshot(page, "admin-upload-phone")
    assert "Traceback" not in (tmp_path / "daphne.log").read_text()
