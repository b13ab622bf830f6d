"""Two tiny hand-written domains for the pipeline tests (real chunks, real embeddings).

``neuro``: three papers with bibliographic metadata and filter fields year (int),
authors (string, person names) and keywords (list). ``arrays``: two how-to pages, no
filter fields. Plus ``empty``: a domain whose store has no chunks.
"""

from __future__ import annotations

import re

from domains import embeddings
from domains.models import Chunk, Document, Domain, FilterField, Store
from domains.person_names import name_variants, variants_key
from domains.text import indexed_text

NEURO = {
    "hodgkin-huxley.md": (
        {"title": "A quantitative description of membrane current", "authors": ["Alan Hodgkin", "Andrew Huxley"],
         "year": 1952, "doi": "10.1113/jphysiol.1952.sp004764", "keywords": ["action potential", "squid axon"],
         "url_doi": "https://doi.org/10.1113/jphysiol.1952.sp004764", "url_orcid": "https://orcid.org/0000-0000-0000-0001"},
        [(["Model"], "The Hodgkin-Huxley model describes how action potentials in neurons are initiated and "
                     "propagated. It uses voltage-gated sodium and potassium conductances in the squid giant axon.")],
    ),
    "izhikevich.md": (
        {"title": "Simple model of spiking neurons", "authors": ["Eugene Izhikevich"], "year": 2003,
         "doi": "10.1109/TNN.2003.820440", "keywords": ["spiking", "cortex"]},
        [(["Abstract"], "The Izhikevich model reproduces spiking and bursting behaviour of cortical neurons with "
                        "only two variables. It is as cheap to simulate as an integrate-and-fire neuron.")],
    ),
    "stdp.md": (
        {"title": "Synaptic modifications in cultured hippocampal neurons", "authors": ["Guo-qiang Bi", "Mu-ming Poo"],
         "year": 1998, "doi": "10.1523/JNEUROSCI.18-24-10464.1998", "keywords": ["plasticity", "synapse"]},
        [(["Results"], "Spike-timing dependent plasticity changes synaptic weights depending on the relative "
                       "timing of presynaptic and postsynaptic spikes within a window of about 20 ms.")],
    ),
}

ARRAYS = {
    "resample.md": (
        {"title": "Resampling time series"},
        [(["Time series", "Resampling"], "Use resample with a frequency such as ME to compute monthly means of "
                                         "a time series. The result holds one value per month.")],
    ),
    "netcdf.md": (
        {"title": "Reading netCDF files"},
        [(["IO", "netCDF"], "The function open_mfdataset opens many netCDF files as one dataset. It combines the "
                            "files along their coordinates.")],
    ),
}

NEURO_DESCRIPTION = "Computational neuroscience papers: neuron models, spiking, synaptic plasticity."
ARRAYS_DESCRIPTION = "Labelled N-dimensional arrays in Python: resampling time series, netCDF input and output."


def make_domain(name: str, description: str, documents: dict, fields=()) -> Domain:
    domain = Domain.objects.create(name=name, description=description)
    store = Store.objects.create(name=f"{name}-store", domain=domain)
    person_fields = []
    for field_name, value_type, person in fields:
        FilterField.objects.create(domain=domain, name=field_name, value_type=value_type, person_name=person)
        if person:
            person_fields.append(field_name)
    rows = []
    for file_name, (metadata, chunks) in documents.items():
        document = Document.objects.create(store=store, file_name=file_name, metadata=metadata, status="stored")
        for ordinal, (headings, text) in enumerate(chunks):
            chunk_metadata = dict(metadata)
            for field_name in person_fields:
                chunk_metadata[variants_key(field_name)] = name_variants(metadata.get(field_name, []))
            rows.append(
                Chunk(store=store, document=document, ordinal=ordinal, text=text, headings=headings,
                      metadata=chunk_metadata, year=metadata.get("year"))
            )
    vectors = embeddings.embed_texts([indexed_text(r.headings, r.text) for r in rows])
    for row, vector in zip(rows, vectors):
        row.embedding = vector
        row.save()
    return domain


def make_domains() -> dict[str, Domain]:
    neuro = make_domain(
        "neuro", NEURO_DESCRIPTION, NEURO,
        fields=[("year", "int", False), ("authors", "string", True), ("keywords", "list", False)],
    )
    arrays = make_domain("arrays", ARRAYS_DESCRIPTION, ARRAYS)
    empty = make_domain("empty", "Nothing indexed yet.", {})
    return {"neuro": neuro, "arrays": arrays, "empty": empty}


_SOURCE = re.compile(r"^### Source document (\d+)/\d+: \[(.+)\]$", re.MULTILINE)


def material_files(prompt: str) -> dict[int, str]:
    """{source number: file name} from a reference material text."""
    return {int(n): name for n, name in _SOURCE.findall(prompt)}
