"""Generate the binary example documents in examples/docs/ (the PDF report and DOCX checklist).

The text files (.md, .txt, .csv) are written by hand; the PDF and DOCX are built
here from the text below so their content is reviewable in git. Run from the
repository root after editing:

    python examples/make_example_docs.py

Needs fpdf2 and python-docx (both in akasha's dev/base dependencies).
"""

from __future__ import annotations

import datetime as dt
import io
import zipfile
from pathlib import Path

DOCS = Path(__file__).resolve().parent / "docs"
FIXED_DATE = dt.datetime(2025, 1, 15, 9, 0, tzinfo=dt.timezone.utc)  # reproducible metadata

REPORT_TITLE = "Intake Pump House - Annual Maintenance Report 2024"

REPORT_PAGES: list[tuple[str, list[str | list[list[str]]]]] = [
    (
        "1. Summary",
        [
            "Kestrel Ridge Water Works, intake pump house. Report prepared by the maintenance lead "
            "for the plant manager, January 2025. It covers the raw-water pumps P-101, P-102 and "
            "P-103 (model KR-CP300, 55 kW motors) for the calendar year 2024 (8,784 hours).",
            "The pump house delivered 5.08 million m3 of raw water in 2024 using 853,000 kWh, a "
            "specific energy of 0.168 kWh/m3 (2023: 0.174 kWh/m3). Fleet availability was 99.32 "
            "percent against a target of 99.0 percent.",
            "There were 6 incidents and no injuries. The most serious was the mechanical seal "
            "failure on P-102 on 14 March 2024, caused by dry running after the suction valve was "
            "left closed; it cost 19 hours of unplanned outage and 1,150 EUR in parts. A "
            "low-suction-pressure interlock tripping at 0.3 bar was installed on all three pumps "
            "in April 2024 to prevent a repeat.",
        ],
    ),
    (
        "2. Running hours and availability",
        [
            "Availability counts every hour a pump could have run if called, so planned work on a "
            "standby pump also reduces it.",
            [
                ["Pump", "Running hours 2024", "Planned downtime (h)", "Unplanned downtime (h)", "Availability"],
                ["P-101", "5,810", "38", "6", "99.50 %"],
                ["P-102", "5,790", "45", "43", "99.00 %"],
                ["P-103", "5,920", "41", "5", "99.48 %"],
                ["Fleet", "17,520", "124", "54", "99.32 %"],
            ],
            "P-102 lost 19 hours to the seal failure in March and 24 hours in September while its "
            "motor winding was dried out after a low insulation reading (35 MOhm on the V winding; "
            "410 MOhm after 24 hours of heating). P-101 lost 6 hours to re-shimming a soft foot in "
            "July. P-103 lost 2 hours to a blocked suction strainer in January and 3 hours after a "
            "vibration trip during a surge test in November.",
        ],
    ),
    (
        "3. Maintenance work and costs",
        [
            "Planned work done in 2024: 35 bearing re-greasings, 9 mechanical seal inspections, "
            "5 coupling alignment checks and 6 motor insulation tests. No major overhaul fell due "
            "in 2024.",
            [
                ["Cost item", "Amount (EUR)"],
                ["Mechanical seal MS-45-SIC for P-102 (unplanned)", "1,150"],
                ["Grease, filters, shims and consumables", "1,340"],
                ["Coupling elements (2 sets)", "780"],
                ["Laser alignment tool calibration", "600"],
                ["Contractor: vibration spectrum analysis", "2,400"],
                ["Spare bearings 6310-C3 and 7310-BECBM for stock", "3,600"],
                ["Total parts and services", "9,870"],
            ],
            "In-house labour was 412 hours (fitters 318 h, electricians 94 h). Maintenance cost per "
            "million m3 pumped was 1,943 EUR, down from 2,210 EUR in 2023.",
        ],
    ),
    (
        "4. Recommendations for 2025",
        [
            "R1. Major overhaul of P-103. It reaches 16,000 hours since its last overhaul at "
            "21,100 counter hours, expected in March 2025. Budget 4,200 EUR in parts and 2 workshop "
            "days. Plan it for a week when P-101 and P-102 are both available.",
            "R2. Fit online vibration sensors to the six bearing housings so that the alert level of "
            "4.5 mm/s and the trip level of 7.1 mm/s are watched continuously instead of weekly. "
            "Quoted cost 6,500 EUR.",
            "R3. Replace the three suction strainer baskets with 3 mm mesh baskets and add a "
            "differential pressure alarm at 0.4 bar (clean strainer: below 0.2 bar).",
            "R4. Label every grease gun with its grams per stroke (workshop gun: 1.5 g per stroke). "
            "Done in June 2024 after the P-101 over-greasing incident; keep it in the audit.",
            "R5. Add a remote alarm for the motor anti-condensation heaters, whose failure caused "
            "the low insulation reading on P-102.",
        ],
    ),
]

CHECKLIST_ROWS = [
    ["No.", "Item", "Method", "Acceptance criterion", "Result"],
    ["1", "Suction and discharge valves", "Visual, hand wheel", "Fully open on running pumps; standby: suction open", ""],
    ["2", "Suction strainer", "Differential pressure gauge", "Below 0.2 bar; clean basket at 0.4 bar", ""],
    ["3", "Mechanical seal leakage", "Count drops for 1 minute", "At most 5 drops per minute", ""],
    ["4", "Seal flush line", "Touch", "Warm, no blockage", ""],
    ["5", "Drive-end bearing temperature", "Infrared thermometer", "Below 80 C (stop at 90 C)", ""],
    ["6", "Non-drive-end bearing temperature", "Infrared thermometer", "Below 80 C (stop at 90 C)", ""],
    ["7", "Vibration, DE housing, horizontal", "Vibration pen, mm/s RMS", "Below 4.5 mm/s; rise under 1.5 mm/s since last week", ""],
    ["8", "Vibration, NDE housing, horizontal", "Vibration pen, mm/s RMS", "Below 4.5 mm/s; rise under 1.5 mm/s since last week", ""],
    ["9", "Coupling guard", "Visual", "Fitted, all 4 bolts present", ""],
    ["10", "Motor anti-condensation heater (standby pump)", "Indicator light", "Light on", ""],
    ["11", "Hour counter reading", "Starter panel", "Recorded; greasing due every 500 h", ""],
    ["12", "Housekeeping and oil/grease spills", "Visual", "Floor clean and dry", ""],
]


def make_report(path: Path) -> None:
    """The annual report: a title and one section per page, tables as real PDF tables."""
    from fpdf import FPDF

    pdf = FPDF(format="A4")
    pdf.set_creation_date(FIXED_DATE)
    pdf.set_title(REPORT_TITLE)
    pdf.set_author("Kestrel Ridge Water Works, maintenance department")
    pdf.set_margins(20, 20, 20)
    for number, (heading, blocks) in enumerate(REPORT_PAGES, 1):
        pdf.add_page()
        pdf.set_font("Helvetica", size=9)
        pdf.cell(0, 6, f"{REPORT_TITLE} - page {number} of {len(REPORT_PAGES)}", new_x="LMARGIN", new_y="NEXT")
        pdf.ln(4)
        pdf.set_font("Helvetica", style="B", size=14)
        pdf.cell(0, 9, heading, new_x="LMARGIN", new_y="NEXT")
        pdf.ln(2)
        for block in blocks:
            if isinstance(block, str):
                pdf.set_font("Helvetica", size=11)
                pdf.multi_cell(0, 6, block, new_x="LMARGIN", new_y="NEXT")
            else:
                pdf.set_font("Helvetica", size=10)
                with pdf.table(first_row_as_headings=True) as table:
                    for row in block:
                        cells = table.row()
                        for value in row:
                            cells.cell(value)
            pdf.ln(4)
    pdf.output(str(path))


def make_checklist(path: Path) -> None:
    """The monthly inspection checklist: instructions, one table, sign-off lines."""
    import docx

    document = docx.Document()
    props = document.core_properties
    props.author = "Kestrel Ridge Water Works, maintenance department"
    props.title = "Monthly Pump Inspection Checklist"
    props.created = props.modified = FIXED_DATE.replace(tzinfo=None)
    props.last_modified_by = "maintenance lead"
    props.revision = 3
    document.add_heading("Monthly Pump Inspection Checklist - Intake Pump House", level=1)
    document.add_paragraph(
        "Form MX-07, revision 3. Complete on the first Monday of each month for each of the pumps "
        "P-101, P-102 and P-103, with the running pumps at their normal duty point. Write the "
        "measured value in the Result column, not just a tick."
    )
    document.add_paragraph(
        "If any result is outside its acceptance criterion, raise a work order the same day. A "
        "bearing above 90 C or a vibration reading above 7.1 mm/s means the pump is stopped at "
        "once and the standby pump started."
    )
    table = document.add_table(rows=len(CHECKLIST_ROWS), cols=len(CHECKLIST_ROWS[0]))
    table.style = "Table Grid"
    for r, row in enumerate(CHECKLIST_ROWS):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    document.add_paragraph("")
    document.add_paragraph("Pump: ________   Date: ________   Hour counter: ________")
    document.add_paragraph("Inspected by: ____________________   Checked by (shift supervisor): ____________________")
    buffer = io.BytesIO()
    document.save(buffer)
    path.write_bytes(_fixed_zip_dates(buffer.getvalue()))


def _fixed_zip_dates(package: bytes) -> bytes:
    """Rewrite a zip with fixed member timestamps so regenerating gives identical bytes."""
    source = zipfile.ZipFile(io.BytesIO(package))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for item in source.infolist():
            info = zipfile.ZipInfo(item.filename, date_time=FIXED_DATE.timetuple()[:6])
            info.compress_type = zipfile.ZIP_DEFLATED
            target.writestr(info, source.read(item))
    return out.getvalue()


def main() -> None:
    DOCS.mkdir(parents=True, exist_ok=True)
    make_report(DOCS / "annual-maintenance-report-2024.pdf")
    make_checklist(DOCS / "monthly-inspection-checklist.docx")


if __name__ == "__main__":
    main()
