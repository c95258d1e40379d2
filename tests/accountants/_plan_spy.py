"""A test helper: record the node count of every plan a search makes (the searches' work, counted, not timed)."""


def record_plan_terms(monkeypatch, module, name="make_plan"):
    """Wrap ``module.<name>`` (a function returning an :class:`~accountants.fourier_inversion.InversionPlan`) for
    the test: each plan it makes is returned as before and its ``terms`` appended to the list returned here."""
    terms = []
    original = getattr(module, name)

    def spy(*args, **kwargs):
        plan = original(*args, **kwargs)
        terms.append(plan.terms)
        return plan

    monkeypatch.setattr(module, name, spy)
    return terms
