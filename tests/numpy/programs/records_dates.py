"""A small table of records with dates, as NumPy's own user guide ("Importing data with
genfromtxt", "Datetimes and timedeltas") teaches it: ``np.genfromtxt`` of an in-memory
CSV with ``names=True`` and ``dtype=None`` into a structured array, missing values
filled, columns by name, a record array sorted by ``order=``; ``np.datetime64`` dates
from strings, day arithmetic with ``np.timedelta64``, ``np.arange`` of dates, months by
``astype("datetime64[M]")``, weekdays, ``np.busday_count`` and ``np.is_busday``.
Plain NumPy; run by import swap."""
import io

import numpy as np

CSV = """\
date,city,temp,rain
2024-01-30,Oslo,-3.5,1.2
2024-01-31,Lima,22.0,0.0
2024-02-01,Oslo,-6.0,
2024-02-02,Pune,28.5,0.4
2024-02-05,Lima,23.5,2.5
2024-02-06,Oslo,-1.0,3.0
2024-02-29,Pune,31.0,
2024-03-01,Lima,21.5,0.1
"""
data = np.genfromtxt(io.StringIO(CSV), delimiter=",", names=True, dtype=None,
                     encoding="utf-8", filling_values={"rain": 0.0})
names = list(data.dtype.names)
temps = data["temp"]
rain = data["rain"]
cities = np.unique(data["city"])
mean_temp = {str(c): float(temps[data["city"] == c].mean()) for c in cities}
by_temp = np.sort(data, order="temp")
coldest = [str(by_temp["city"][0]), float(by_temp["temp"][0])]

dates = data["date"].astype("datetime64[D]")
gaps = np.diff(dates)
span = (dates[-1] - dates[0]).astype(int)
months = dates.astype("datetime64[M]")
month_labels, month_counts = np.unique(months, return_counts=True)
weekday = (dates.astype("datetime64[D]").astype(np.int64) - 4) % 7     # 0 is Monday
week = np.arange(np.datetime64("2024-02-26"), np.datetime64("2024-03-04"))
leap_day = np.datetime64("2024-02-28") + np.timedelta64(1, "D")
busy = np.is_busday(dates)
business_days = int(np.busday_count(dates[0], dates[-1]))
due = np.busday_offset(dates, 3, roll="forward")

table = np.zeros(len(data), dtype=[("city", "U8"), ("temp", "f8"), ("wet", "?")])
table["city"] = data["city"]
table["temp"] = temps
table["wet"] = rain > 0.5
wet_cities = table[table["wet"]]["city"]

RESULT = {
    "names": names,
    "temps": temps,
    "rain": rain,
    "cities": cities.tolist(),
    "mean_temp": mean_temp,
    "coldest": coldest,
    "gaps": gaps.astype(int),
    "span": int(span),
    "months": [str(m) for m in month_labels],
    "month_counts": month_counts,
    "weekday": weekday,
    "week": [str(d) for d in week],
    "leap_day": str(leap_day),
    "busy": busy,
    "business_days": business_days,
    "due": [str(d) for d in due],
    "wet_cities": wet_cities.tolist(),
}
