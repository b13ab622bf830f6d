from django.conf import settings
from django.contrib import admin
from django.core.exceptions import TooManyFilesSent
from django.http import HttpResponseBadRequest
from django.templatetags.static import static
from django.urls import include, path
from django.utils.html import escape
from django.views.defaults import bad_request as django_bad_request
from django.views.generic import RedirectView

urlpatterns = [
    path("admin/", admin.site.urls),
    # Browsers ask for /favicon.ico on pages that name no icon (the admin's).
    path("favicon.ico", RedirectView.as_view(url=static("chat/icon.svg"), permanent=True)),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/", include("ingestion.urls")),
    path("", include("chat.urls")),
]


def bad_request(request, exception=None):
    """Django's 400 page, saying why when an upload held too many files: Django refuses a
    form of over DATA_UPLOAD_MAX_NUMBER_FILES (100) files while the CSRF check reads it,
    before the upload view could (an admin upload of 101 files got a bare "Bad Request")."""
    if isinstance(exception, TooManyFilesSent):
        limit = settings.DATA_UPLOAD_MAX_NUMBER_FILES
        return HttpResponseBadRequest(
            f"<!doctype html><title>Too many files</title><h1>Too many files</h1><p>{escape(request.path)}: "
            f"one upload may hold at most {limit} files; nothing was saved. Upload them in batches of "
            f"{limit} or fewer.</p>")
    return django_bad_request(request, exception)


handler400 = bad_request
