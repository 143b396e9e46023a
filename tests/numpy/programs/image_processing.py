"""Image processing on a synthetic grey image, as scikit-image-free tutorials write it
in NumPy (the OpenCV-Python "Histogram Equalization" tutorial's ``np.histogram`` /
cumulative-histogram recipe and its masked-array variant; box and Gaussian blurs by
convolution over a padded image; Sobel edges; a median filter over
``sliding_window_view``; Otsu's threshold — the recipes, in our own code). Plain NumPy;
run by import swap."""
import numpy as np

rng = np.random.default_rng(8)
h, w = 48, 64
yy, xx = np.mgrid[0:h, 0:w]
image = 40 + 0.8 * xx + 0.3 * yy                           # a gradient
image[(yy - 24) ** 2 + (xx - 20) ** 2 < 100] = 200         # a bright disc
image[10:20, 40:58] = 15                                   # a dark rectangle
image += rng.normal(0, 6, size=image.shape)
img = np.clip(image, 0, 255).astype(np.uint8)


def convolve2d(img, kernel):
    kh, kw = kernel.shape
    padded = np.pad(img.astype(np.float64), ((kh // 2, kh // 2), (kw // 2, kw // 2)), mode="edge")
    out = np.zeros(img.shape, dtype=np.float64)
    for i in range(kh):
        for j in range(kw):
            out += kernel[i, j] * padded[i:i + img.shape[0], j:j + img.shape[1]]
    return out


box = convolve2d(img, np.ones((3, 3)) / 9.0)
t = np.arange(-2, 3)
g1 = np.exp(-t**2 / (2 * 1.0**2))
g1 /= g1.sum()
gauss = convolve2d(img, np.outer(g1, g1))
windows = np.lib.stride_tricks.sliding_window_view(np.pad(img, 2, mode="reflect"), (5, 5))
gauss_windows = np.einsum("ijkl,kl->ij", windows.astype(float), np.outer(g1, g1))

sobel_x = np.array([[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]], dtype=float)
gx = convolve2d(gauss, sobel_x[::-1, ::-1])
gy = convolve2d(gauss, sobel_x.T[::-1, ::-1])
magnitude = np.hypot(gx, gy)
direction = np.degrees(np.arctan2(gy, gx))
edges = magnitude > np.percentile(magnitude, 90)

median = np.median(np.lib.stride_tricks.sliding_window_view(np.pad(img, 1, mode="edge"), (3, 3)),
                   axis=(-2, -1)).astype(np.uint8)

# Histogram equalization by the cumulative histogram, then by np.interp.
hist, bins = np.histogram(img.flatten(), 256, [0, 256])
cdf = hist.cumsum()
cdf_m = np.ma.masked_equal(cdf, 0)
cdf_m = (cdf_m - cdf_m.min()) * 255 / (cdf_m.max() - cdf_m.min())
lut = np.ma.filled(cdf_m, 0).astype(np.uint8)
equalized = lut[img]
cdf_normalized = cdf * 255.0 / cdf[-1]
equalized_interp = np.interp(img.flatten(), bins[:-1], cdf_normalized).reshape(img.shape)
eq_hist, _ = np.histogram(equalized, bins=8, range=(0, 256))

# Otsu: the threshold that maximises the between-class variance.
p = hist / hist.sum()
omega = np.cumsum(p)
mu = np.cumsum(p * np.arange(256))
with np.errstate(divide="ignore", invalid="ignore"):
    between = (mu[-1] * omega - mu) ** 2 / (omega * (1 - omega))
otsu = int(np.nanargmax(between))
binary = (img > otsu).astype(np.uint8) * 255

RESULT = {
    "img": img,
    "box": box,
    "gauss": gauss,
    "gauss_interior_agrees": bool(np.allclose(gauss[2:-2, 2:-2], gauss_windows[2:-2, 2:-2])),
    "magnitude": magnitude,
    "direction_mean": float(direction.mean()),
    "edge_count": int(edges.sum()),
    "median": median,
    "hist_nonzero": int(np.count_nonzero(hist)),
    "equalized": equalized,
    "equalized_interp": equalized_interp,
    "eq_hist": eq_hist,
    "otsu": otsu,
    "foreground": float(binary.mean() / 255),
}
