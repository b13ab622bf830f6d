import django, os
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "klea_site.settings")
django.setup()
from tests.extractive_helpers import answer, source
from chat.backends.extractive.passages import Composer
DUTIES = (
    "The Quill steering committee has the following responsibilities:\n\n"
    "- To advise on the scientific focus of the Quill initiative and on the structure of its file format.\n"
    "- To agree on the technical implementation of the core specifications, with the editors.\n"
    "- To decide how the Quill initiative spends its funding and which workshops it holds.\n"
    "- To promote Quill internationally, both the core specifications and the tools which support them."
)
EDITORS = "The Quill editors maintain the documentation and work with the steering committee, who provide oversight."
q = "What is the Quill steering committee responsible for?"
print(repr(answer(q, source(1, DUTIES, ["Quill", "Steering committee"]), source(2, EDITORS, ["Quill", "Editors"]))))
Composer._siblings = lambda self, chosen, others: []
print(repr(answer(q, source(1, DUTIES, ["Quill", "Steering committee"]), source(2, EDITORS, ["Quill", "Editors"]))))
