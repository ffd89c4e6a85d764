/* target_size.c - transformers' get_aspect_ratio_preserving_size (docs/PREPROCESSING.md §5).
 *
 * Computed in double in the same order as the Python code (factor = sqrt(target_px / (h*w)),
 * ideal = factor*h, floor(ideal / 48) * 48), so the results agree for every input size. Only the
 * budgets the HF processors accept (G4V_BUDGETS in g4v.h) are allowed.
 */
#include "image/image.h"

#include "base/budget.h"

#include <math.h>

int g4v_target_size(int height, int width, int budget, int *th, int *tw, g4v_err *err) {
    if (g4v_budget_require(budget, err)) return G4V_ERR_ARG;
    if (height <= 0 || width <= 0)
        return g4v_fail(err, G4V_ERR_ARG, "target size: invalid image size %dx%d", width, height);
    const int patch = 16, pool = 3, side = pool * patch;
    long long max_patches = (long long)budget * pool * pool;
    long long target_px = max_patches * patch * patch;
    long long total_px = (long long)height * width; /* < 2^53: Python's int / int is exact here */
    double factor = sqrt((double)target_px / (double)total_px);
    double ideal_h = factor * height, ideal_w = factor * width;
    long long h = (long long)floor(ideal_h / side) * side;
    long long w = (long long)floor(ideal_w / side) * side;
    if (h == 0 && w == 0)
        return g4v_fail(err, G4V_ERR_IMAGE, "target size: %dx%d gives an empty image", width,
                        height);
    long long max_side = (max_patches / (pool * pool)) * side;
    if (h == 0) {
        h = side;
        long long v = (long long)floor((double)width / (double)height) * side;
        w = v < max_side ? v : max_side;
    } else if (w == 0) {
        w = side;
        long long v = (long long)floor((double)height / (double)width) * side;
        h = v < max_side ? v : max_side;
    }
    if (h * w > target_px)
        return g4v_fail(err, G4V_ERR_IMAGE,
                        "target size: %lldx%lld for a %dx%d image exceeds %lld pixels", w, h,
                        width, height, target_px);
    *th = (int)h;
    *tw = (int)w;
    return G4V_OK;
}
