"""fsba's torch use is autograd on small float64 CPU problems: no device entries, by reason."""

NO_DEVICE = {
    "BilevelProblem": "differentiates small float64 objectives (d <= 160) with torch autograd on "
                      "the CPU; numpy in and out (a GPU would only add transfer latency)",
    "make_saddle_bilevel": "builds a BilevelProblem (numpy data, CPU torch autograd)",
}
