from django.contrib import admin
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView

urlpatterns = [
    path("admin/", admin.site.urls),
    # Browsers ask for /favicon.ico on pages that name no icon (the admin's).
    path("favicon.ico", RedirectView.as_view(url=static("chat/icon.svg"), permanent=True)),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/", include("ingestion.urls")),
    path("", include("chat.urls")),
]
