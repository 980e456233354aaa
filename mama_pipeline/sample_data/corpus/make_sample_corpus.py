"""Write the synthetic sample corpus ``chunks_for_rag.txt`` (deterministic).

Every sentence here was written for this project. The text imitates the shape of
maternal-health guideline chunks (section paths, numbered steps, dosing tables,
educator material, front matter) so that parsing, sampling and query writing can
be exercised; it is NOT clinical guidance and must not be used as such.

Run: ``python -m mama_pipeline.sample_data.corpus.make_sample_corpus``
(``--out PATH`` to write elsewhere). :func:`generate_source` is also used by
``benchmarks/corpus_scale.py`` to build a full-size bundle.
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from mama_pipeline.corpus import write_text_bundle

SEED = 20250601
HERE = Path(__file__).resolve().parent

Chunk = tuple[str, int, list[str], str]  # source, page, breadcrumb lines (without ">"), body

# -- clinical-style sentence banks (synthetic) --------------------------------
TOPICS: dict[str, dict[str, list[str]]] = {
    "pph": {
        "chapters": ["Bleeding after birth", "Postpartum haemorrhage", "Third stage of labour"],
        "sections": [
            "Preventing heavy bleeding",
            "Active management of the third stage",
            "First response to heavy bleeding",
            "Retained placenta",
            "Referral and transfer",
        ],
        "sentences": [
            "Give oxytocin 10 IU by intramuscular injection within one minute of the birth of the baby, once a second baby has been excluded.",
            "Postpartum haemorrhage is usually defined as blood loss of 500 ml or more within 24 hours of birth.",
            "Massage the uterus through the abdomen until it is firm, and teach the woman to feel and rub her own uterus.",
            "If the uterus stays soft after massage, give a further uterotonic and call for help at once.",
            "Check the placenta and membranes for completeness, because retained fragments are a common cause of continued bleeding.",
            "Start an intravenous infusion with a wide-bore cannula and give crystalloid fluid while the cause is being found.",
            "Tranexamic acid 1 g intravenously over 10 minutes is added when bleeding continues, ideally within three hours of birth.",
            "Bimanual compression of the uterus can slow bleeding while transfer to a facility with surgical care is arranged.",
            "Measure blood loss with a calibrated drape rather than by visual estimate, which tends to underestimate it.",
            "Look for tears of the cervix, vagina and perineum when the uterus is firm but bleeding continues.",
            "A woman who has lost a large volume of blood needs her pulse and blood pressure checked every 15 minutes.",
            "Misoprostol 800 micrograms under the tongue is an option where oxytocin cannot be stored in the cold chain.",
            "Empty the bladder, since a full bladder can stop the uterus from contracting well.",
            "Record the time, the drugs given and the estimated blood loss on the referral note.",
        ],
    },
    "preeclampsia": {
        "chapters": ["High blood pressure in pregnancy", "Hypertensive disorders", "Pre-eclampsia and eclampsia"],
        "sections": [
            "Recognising pre-eclampsia",
            "Severe features",
            "Magnesium sulfate",
            "Controlling blood pressure",
            "Care after an eclamptic fit",
        ],
        "sentences": [
            "Measure blood pressure at every antenatal visit with the woman seated and an appropriately sized cuff.",
            "A blood pressure of 140/90 mmHg or more on two readings four hours apart after 20 weeks needs further assessment.",
            "Test the urine for protein whenever the blood pressure is raised.",
            "Severe headache, blurred vision, pain under the ribs on the right and reduced urine output are danger signs.",
            "Magnesium sulfate is the drug of choice to prevent and treat eclamptic fits.",
            "The loading dose is 4 g intravenously over 5 to 10 minutes, followed by 10 g intramuscularly split between both buttocks.",
            "Before each maintenance dose, check that the knee reflexes are present, breathing is at least 16 per minute and urine output is adequate.",
            "Keep calcium gluconate 1 g ready as the antidote to magnesium toxicity.",
            "Lower a systolic pressure of 160 mmHg or more with an antihypertensive such as labetalol, hydralazine or nifedipine.",
            "During a fit, protect the woman from injury, place her on her left side and keep the airway clear.",
            "Delivery is the definitive treatment, and its timing depends on gestation and the condition of mother and baby.",
            "Continue magnesium sulfate for 24 hours after the birth or after the last fit, whichever is later.",
            "Low-dose aspirin from 12 weeks is offered to women at high risk of pre-eclampsia.",
            "Women who had pre-eclampsia need their blood pressure checked again in the first weeks after birth.",
        ],
    },
    "resus": {
        "chapters": ["Care of the newborn at birth", "Newborn resuscitation", "Helping babies breathe"],
        "sections": [
            "The golden minute",
            "Bag and mask ventilation",
            "When the heart rate is slow",
            "Equipment checks",
            "After resuscitation",
        ],
        "sentences": [
            "Dry the baby thoroughly and keep it warm; drying is often enough to start breathing.",
            "If the baby is not breathing or is gasping after drying, clamp and cut the cord and begin ventilation within one minute.",
            "Position the head in a neutral position and clear the airway only if secretions block it.",
            "Ventilate with a bag and mask at 40 to 60 breaths per minute, watching for the chest to rise.",
            "If the chest does not rise, reposition the head, reapply the mask for a better seal and check the airway.",
            "Assess the heart rate by feeling the cord base or listening with a stethoscope after one minute of ventilation.",
            "A heart rate below 60 per minute despite good ventilation calls for chest compressions where staff are trained.",
            "Start with room air for term babies; extra oxygen is added only if there is no improvement.",
            "Check the bag, mask sizes and suction device before every birth.",
            "If there is no heartbeat after 10 minutes of effective resuscitation, stopping is usually appropriate.",
            "A baby who needed ventilation should be watched closely for breathing problems, low temperature and poor feeding.",
            "Explain to the parents what happened and what care the baby will need next.",
            "Meconium-stained liquor alone is not a reason to suction a vigorous baby.",
        ],
    },
    "breastfeeding": {
        "chapters": ["Breastfeeding", "Feeding the newborn", "Infant feeding"],
        "sections": [
            "Early initiation",
            "Positioning and attachment",
            "Breast problems",
            "Low milk supply",
            "Expressing milk",
        ],
        "sentences": [
            "Put the baby skin to skin and help the mother begin breastfeeding within the first hour after birth.",
            "Good attachment shows as a wide open mouth, the lower lip turned out and more areola visible above the mouth than below.",
            "Exclusive breastfeeding is recommended for the first six months, with no water or other feeds.",
            "Feed on demand, usually 8 to 12 times in 24 hours in the first weeks.",
            "Sore or cracked nipples are most often caused by poor attachment and improve when it is corrected.",
            "Engorged breasts are eased by frequent feeding, warm compresses before feeds and gentle expression.",
            "Mastitis presents with a hot, painful, red area of the breast and fever; breastfeeding should continue from both sides.",
            "An abscess needs drainage and the mother can keep feeding from the other breast.",
            "Six or more wet nappies a day after the first week suggests the baby is getting enough milk.",
            "Teach the mother to express by hand so that milk can be given by cup if the baby cannot suckle.",
            "Expressed breast milk can be kept at room temperature for up to six to eight hours.",
            "A baby who is sleepy and feeds poorly in the first days needs to be checked for jaundice, infection and low blood sugar.",
        ],
    },
    "malaria": {
        "chapters": ["Malaria in pregnancy", "Fever in pregnancy", "Infections in pregnancy"],
        "sections": [
            "Prevention",
            "Intermittent preventive treatment",
            "Treating uncomplicated malaria",
            "Severe malaria",
            "Bed nets",
        ],
        "sentences": [
            "Pregnant women in areas of stable transmission should sleep under an insecticide-treated bed net every night.",
            "Intermittent preventive treatment with sulfadoxine-pyrimethamine is given at each scheduled visit from the second trimester.",
            "Doses of sulfadoxine-pyrimethamine should be at least one month apart and given as directly observed treatment.",
            "Do not give sulfadoxine-pyrimethamine to women taking co-trimoxazole prophylaxis.",
            "Confirm malaria with a rapid diagnostic test or microscopy before treatment whenever possible.",
            "In the first trimester, uncomplicated falciparum malaria may be treated with an artemisinin-based combination in many current protocols.",
            "Severe malaria in pregnancy is an emergency; give injectable artesunate and refer.",
            "Signs of severe malaria include confusion, convulsions, severe anaemia, jaundice and breathing difficulty.",
            "Malaria in pregnancy raises the risk of maternal anaemia, low birth weight and stillbirth.",
            "Check the haemoglobin of a woman treated for malaria and give iron and folic acid.",
            "Low blood sugar is common with severe malaria and quinine treatment; check it and correct it.",
            "Counsel the woman to come back at once if the fever returns after treatment.",
        ],
    },
    "family_planning": {
        "chapters": ["Family planning", "Contraception after birth", "Birth spacing"],
        "sections": [
            "Counselling",
            "Lactational amenorrhoea",
            "Postpartum IUD",
            "Implants and injectables",
            "Emergency contraception",
        ],
        "sentences": [
            "Discuss family planning during antenatal care and again before the woman leaves the facility after birth.",
            "An interval of at least 24 months between a birth and the next pregnancy is advised for the health of mother and child.",
            "The lactational amenorrhoea method works only if the baby is under six months, fed only breast milk, and periods have not returned.",
            "A copper IUD can be inserted within 48 hours of birth or from four weeks after it.",
            "Progestogen-only implants can be started at any time after birth, including by breastfeeding women.",
            "Combined oral contraceptives are usually avoided in the first six weeks for breastfeeding women.",
            "The progestogen injection is repeated every 12 or 13 weeks depending on the product.",
            "Emergency contraception with levonorgestrel is most effective when taken as soon as possible after unprotected sex.",
            "Tubal ligation can be done during caesarean section or within a week of birth if the woman has decided in advance.",
            "Respect the woman's choice and make sure the decision is made freely, with her partner involved only if she wishes.",
            "Condoms protect against sexually transmitted infections as well as pregnancy.",
            "Return of fertility after stopping an implant is rapid, while after injections it may take several months.",
        ],
    },
    "antenatal": {
        "chapters": ["Antenatal care", "Care during pregnancy", "The antenatal visit"],
        "sections": [
            "Booking visit",
            "Routine tests",
            "Nutrition and supplements",
            "Danger signs",
            "Birth preparedness",
        ],
        "sentences": [
            "A schedule of at least eight antenatal contacts is recommended, with the first in the first 12 weeks.",
            "At the booking visit, record the last menstrual period, previous pregnancies and any long-term illness.",
            "Offer testing for HIV, syphilis and hepatitis B at the first visit.",
            "Give daily iron and folic acid throughout pregnancy to prevent anaemia.",
            "Measure the symphysis-fundal height from 24 weeks and plot it on a chart.",
            "Tetanus toxoid vaccination is given according to the woman's previous immunisation record.",
            "Teach every woman the danger signs: bleeding, severe headache, fits, fever, severe abdominal pain and reduced fetal movements.",
            "Help the family plan how to reach the facility for the birth, including transport and money.",
            "An ultrasound scan before 24 weeks helps to date the pregnancy and detect multiple pregnancy.",
            "Ask about intimate partner violence in private, at more than one visit.",
            "Women with a previous caesarean section should plan to give birth in a facility that can perform surgery.",
            "Encourage a varied diet with enough energy and protein, and avoid alcohol and tobacco.",
        ],
    },
    "labour": {
        "chapters": ["Care in labour", "Monitoring labour", "Prolonged and obstructed labour"],
        "sections": [
            "Admission in labour",
            "Using the partograph",
            "Fetal heart monitoring",
            "Slow progress",
            "Second stage",
        ],
        "sentences": [
            "On admission, check the woman's vital signs, the lie and presentation of the baby, and the fetal heart rate.",
            "Record cervical dilatation, contractions and the fetal heart on the partograph at the intervals in the protocol.",
            "Listen to the fetal heart every 30 minutes in the first stage and every 5 minutes in the second stage.",
            "A fetal heart rate below 110 or above 160 beats per minute needs action and close review.",
            "Encourage the woman to move, drink and pass urine regularly during labour.",
            "If dilatation crosses the action line of the partograph, assess for obstruction and consider referral.",
            "Signs of obstruction include a swollen cervix, moulding of the fetal skull and a contraction ring.",
            "Let the woman choose her position for birth and have a companion with her.",
            "Do not perform routine episiotomy; cut one only when it is clearly needed.",
            "After more than one hour of pushing in a first labour without progress, call for help.",
            "Give antibiotics if the membranes have been ruptured for more than 18 hours.",
            "Oxytocin for augmentation is used only where the fetal heart can be monitored closely.",
        ],
    },
    "sepsis": {
        "chapters": ["Infection after birth", "Maternal sepsis", "Fever after childbirth"],
        "sections": [
            "Recognising sepsis",
            "First-line antibiotics",
            "Prevention of infection",
            "Wound infection",
            "Referral criteria",
        ],
        "sentences": [
            "Fever of 38 degrees or more with lower abdominal pain and foul-smelling lochia suggests infection of the uterus.",
            "A fast pulse, fast breathing, low blood pressure or confusion in a woman with infection are signs of sepsis.",
            "Start broad-spectrum antibiotics within one hour of recognising sepsis.",
            "A common first-line combination is ampicillin, gentamicin and metronidazole given intravenously.",
            "Give intravenous fluids and monitor urine output when sepsis is suspected.",
            "Wash hands before and after touching each woman and use clean gloves for vaginal examinations.",
            "Limit vaginal examinations in labour to those that are needed, usually every four hours.",
            "A single dose of prophylactic antibiotic is given before caesarean section.",
            "A red, swollen, painful wound that discharges pus needs opening, cleaning and daily dressing.",
            "Look for retained placental tissue when infection follows a birth with an incomplete placenta.",
            "Refer at once if the woman does not improve within 48 hours of antibiotics.",
            "Tell the woman to return if she has fever, pain or offensive discharge in the weeks after birth.",
        ],
    },
    "anaemia": {
        "chapters": ["Anaemia in pregnancy", "Nutrition", "Blood disorders in pregnancy"],
        "sections": ["Screening", "Iron supplementation", "Severe anaemia", "Causes", "Transfusion"],
        "sentences": [
            "Check the haemoglobin at the first visit, at 28 weeks and again at 36 weeks.",
            "A haemoglobin below 11 g/dl in pregnancy is usually taken as anaemia.",
            "Pale conjunctivae, palms and nail beds are signs to look for at every visit.",
            "Treat mild anaemia with a higher daily dose of oral iron and recheck after four weeks.",
            "Treat hookworm with a single dose of albendazole after the first trimester where infection is common.",
            "Severe anaemia below 7 g/dl needs investigation and birth in a facility with blood transfusion.",
            "Shortness of breath at rest and a fast pulse in an anaemic woman are signs of heart strain.",
            "Taking iron with vitamin C-rich food and away from tea improves absorption.",
            "Black stools and mild constipation are common with iron and do not mean it should be stopped.",
            "Malaria, HIV and short intervals between pregnancies all add to the risk of anaemia.",
            "Blood transfusion is reserved for severe anaemia with signs of decompensation or heavy blood loss.",
            "Delaying cord clamping by one to three minutes improves the newborn's iron stores.",
        ],
    },
    "newborn": {
        "chapters": ["Essential newborn care", "The first days of life", "Small and sick newborns"],
        "sections": [
            "Keeping the baby warm",
            "Cord care",
            "Kangaroo mother care",
            "Danger signs in the newborn",
            "Vitamin K and immunisation",
        ],
        "sentences": [
            "Keep the room warm and free of draughts, and delay the first bath for at least 24 hours.",
            "Place the baby skin to skin on the mother's chest and cover both with a blanket and the baby's head with a hat.",
            "Keep the cord clean and dry; apply chlorhexidine where local guidance recommends it.",
            "Kangaroo mother care is recommended for stable babies weighing 2000 g or less.",
            "Danger signs include not feeding, convulsions, fast breathing, chest indrawing, fever and a cold body.",
            "Give vitamin K 1 mg intramuscularly to every newborn soon after birth.",
            "Give the birth doses of BCG, oral polio and hepatitis B vaccines before discharge.",
            "Weigh the baby and record the weight; babies under 2500 g need extra attention to warmth and feeding.",
            "Yellow skin in the first 24 hours of life is never normal and needs urgent assessment.",
            "Check the baby's temperature, breathing and feeding before the family goes home.",
            "A newborn who is cold should be rewarmed skin to skin and checked again after one hour.",
            "Counsel the family on when to bring the baby back urgently.",
        ],
    },
    "hiv": {
        "chapters": ["HIV in pregnancy", "Preventing transmission to the baby", "Infections and pregnancy"],
        "sections": [
            "Testing and counselling",
            "Antiretroviral therapy",
            "Care in labour",
            "Infant prophylaxis",
            "Infant feeding and HIV",
        ],
        "sentences": [
            "Offer HIV testing to every pregnant woman, with repeat testing later in pregnancy in high-prevalence settings.",
            "Women living with HIV start lifelong antiretroviral therapy as soon as possible, whatever their CD4 count.",
            "Viral load is checked during pregnancy to confirm that treatment is working.",
            "Avoid artificial rupture of membranes and unnecessary instrumental delivery in women with a detectable viral load.",
            "Give the newborn antiretroviral prophylaxis according to the mother's viral load and the national protocol.",
            "Test the exposed infant at the ages set out in the national schedule and after breastfeeding ends.",
            "Mothers on effective treatment are supported to breastfeed exclusively for six months.",
            "Offer partner testing and support disclosure when the woman is ready.",
            "Co-trimoxazole prophylaxis is started for exposed infants from six weeks of age in many programmes.",
            "Screen women living with HIV for tuberculosis symptoms at every visit.",
            "Adherence counselling should address stigma, side effects and how to keep medicines at home.",
            "Record the infant's HIV exposure clearly on the child health card.",
        ],
    },
}

TABLES = {
    "pph": "| Drug | Dose | Route | Note |\n|---|---|---|---|\n| Oxytocin | 10 IU | IM or IV | first choice |\n| Misoprostol | 800 mcg | sublingual | no cold chain needed |\n| Tranexamic acid | 1 g | IV over 10 min | within 3 hours of birth |",
    "preeclampsia": "| Step | Magnesium sulfate | Check before giving |\n|---|---|---|\n| Loading | 4 g IV over 5-10 min plus 10 g IM | baseline reflexes |\n| Maintenance | 5 g IM every 4 hours | reflexes, breathing 16/min, urine 30 ml/h |\n| Toxicity | stop and give calcium gluconate 1 g IV | breathing below 16/min |",
    "newborn": "| Sign | Action |\n|---|---|\n| Temperature below 36.5 C | skin to skin, recheck in 1 hour |\n| Breathing over 60/min | assess for infection, refer |\n| Not feeding | check sugar and temperature, refer |",
    "malaria": "| Visit | Sulfadoxine-pyrimethamine |\n|---|---|\n| From 13 weeks | first dose, observed |\n| Each later visit | repeat if at least 4 weeks since last dose |\n| Co-trimoxazole taken | do not give |",
}

EDUCATOR = [
    "Ask the students to work in pairs and describe a birth they have observed.",
    "Reflect on how your own attitudes might affect the care you give.",
    "Use the case study below to lead a group discussion of about 20 minutes.",
    "The facilitator should prepare flip charts and a model pelvis before the session.",
    "At the end of the session, students complete the self-assessment checklist.",
    "Invite learners to share what they found most difficult about this topic.",
    "This module builds on the skills practised in the previous unit.",
    "Role-play the conversation with one student acting as the mother and one as the midwife.",
]
OSCE = [
    "You have 10 minutes at this station.",
    "The examiner will observe your communication and your technique.",
    "Read the scenario carefully before entering the station.",
    "Candidates are marked on the checklist provided to the examiner.",
    "Explain your actions aloud as you perform them.",
    "Wash your hands and introduce yourself to the simulated patient.",
]

BOILERPLATE = {
    "copyright": (
        "",
        "© {year} {org}. All rights reserved. No part of this publication may be reproduced without "
        "permission. ISBN 978-0-{isbn}. Printed in {place}.",
    ),
    "contents": (
        "Contents",
        "Introduction 1\nChapter 1 Pregnancy {n}\nChapter 2 Labour 31\nChapter 3 After the birth 58\n"
        "Chapter 4 The newborn 77\nAnnex 101",
    ),
    "foreword": (
        "Foreword",
        "It is a pleasure to introduce this {ordinal} edition ({year}). Many people across {place} helped "
        "to write and review it, and we hope it will be used widely by those who care for mothers "
        "and babies.",
    ),
    "objectives": (
        "Learning objectives",
        "By the end of unit {n} you will be able to:\n1. Describe the main causes "
        "covered in this unit.\n2. List the steps of the first response.\n3. Explain "
        "when to refer.",
    ),
    "references": (
        "References",
        "1. Author A, Author B. A study of care in labour. J Synth Midwifery. {year};3:{n}-9.\n"
        "2. Author C. Handbook of newborn care. 2nd ed. Example Press; 2012.\n3. Author D, "
        "et al. Trial of a care bundle. Synth Med J. 2019;12:44-51.",
    ),
    "acknowledgements": (
        "Acknowledgements",
        "We thank the midwives, nurses and doctors in {place} who reviewed the "
        "drafts of the {ordinal} edition, and the families who allowed their "
        "stories to be told.",
    ),
    "form": (
        "",
        "Form {n}\n\n| Date | Time | BP | Pulse | Temp | Signature |\n|---|---|---|---|---|---|\n"
        "| | | | | | |\n| | | | | | |\n| | | | | | |\n| | | | | | |",
    ),
    "short": ("", "Figure {n}. See the next page."),
}


FRONT_MATTER = ("copyright", "contents", "foreword", "acknowledgements")


@dataclass
class SourceSpec:
    slug: str
    style: str  # handbook | protocol | educator | osce
    topics: list[str]
    chunks: int  # content chunks
    boilerplate: list[str] = field(default_factory=list)  # keys of BOILERPLATE; front matter goes first
    inline_breadcrumb: bool = False  # one "> A > B" line instead of one line per level


SAMPLE_SOURCES = [
    SourceSpec(
        "hesperian-a-book-for-midwives",
        "handbook",
        ["antenatal", "labour", "pph", "breastfeeding", "family_planning"],
        40,
        ["copyright", "contents", "acknowledgements", "references", "short"],
    ),
    SourceSpec(
        "msf-essential-obstetric-and-newborn-care",
        "protocol",
        ["pph", "preeclampsia", "sepsis", "resus", "malaria"],
        40,
        ["copyright", "contents", "foreword", "form", "references"],
        inline_breadcrumb=True,
    ),
    SourceSpec(
        "oxford-handbook-of-midwifery",
        "handbook",
        ["antenatal", "anaemia", "labour", "newborn", "hiv"],
        36,
        ["copyright", "contents", "short"],
    ),
    SourceSpec(
        "who-midwifery-education-modules-3",
        "educator",
        ["pph", "sepsis", "preeclampsia"],
        30,
        ["copyright", "objectives", "objectives", "foreword", "references", "form"],
    ),
    SourceSpec(
        "midwifery-essentials-3",
        "handbook",
        ["labour", "breastfeeding", "newborn"],
        32,
        ["copyright", "contents", "references"],
    ),
    SourceSpec(
        "tanzania-moh-obstetric-protocols",
        "protocol",
        ["malaria", "anaemia", "hiv", "pph"],
        34,
        ["copyright", "foreword", "acknowledgements", "form"],
        inline_breadcrumb=True,
    ),
    SourceSpec(
        "nmc-midwifery-mock-osce",
        "osce",
        ["resus", "breastfeeding"],
        3,
        ["objectives", "form", "form", "short", "short"],
    ),
    SourceSpec(
        "who-recommendations-postnatal-care",
        "protocol",
        ["breastfeeding", "family_planning", "newborn", "sepsis"],
        34,
        ["copyright", "contents", "references"],
    ),
]


def _body(rng: random.Random, spec: SourceSpec, topic: str, seen: set[str]) -> str:
    bank = TOPICS[topic]["sentences"]
    for _ in range(100):
        k = rng.randint(3, 6)
        sentences = rng.sample(bank, k)
        if spec.style == "protocol" and rng.random() < 0.6:
            text = "\n".join(f"{i}. {s}" for i, s in enumerate(sentences, 1))
        elif spec.style == "educator" and rng.random() < 0.4:
            text = " ".join(rng.sample(EDUCATOR, 2) + sentences[:2])
        elif spec.style == "osce":
            text = " ".join(rng.sample(OSCE, 3) + sentences[:3])
        else:
            text = " ".join(sentences)
        if topic in TABLES and rng.random() < 0.12:
            text = sentences[0] + "\n\n" + TABLES[topic]
        if text not in seen:
            seen.add(text)
            return text
    raise RuntimeError(f"could not compose a new chunk for {spec.slug}/{topic}")


def _boilerplate(rng: random.Random, kind: str, seen: set[str]) -> tuple[list[str], str]:
    heading, template = BOILERPLATE[kind]
    for _ in range(100):
        body = template.format(
            year=rng.randint(2005, 2022),
            org="Synthetic Health Press",
            isbn=f"{rng.randint(100000, 999999)}-{rng.randint(10, 99)}-{rng.randint(1, 9)}",
            place=rng.choice(["Dar es Salaam", "Zanzibar", "Geneva", "Nairobi"]),
            n=rng.randint(1, 400),
            ordinal=rng.choice(["first", "second", "third", "fourth", "fifth"]),
        )
        if body not in seen:
            seen.add(body)
            return ([heading] if heading else []), body
    raise RuntimeError(f"could not compose a new {kind} chunk")


def generate_source(spec: SourceSpec, seen: set[str], seed: int = SEED) -> Iterator[Chunk]:
    """The chunks of one synthetic source: front matter, then chapters with boilerplate spread in.

    ``seen`` holds the bodies written so far (shared across sources): every body is new.
    """
    rng = random.Random(f"{seed}:{spec.slug}")
    page = rng.randint(1, 4)
    front = [k for k in spec.boilerplate if k in FRONT_MATTER]
    inner = [k for k in spec.boilerplate if k not in FRONT_MATTER]
    for kind in front:
        heading, body = _boilerplate(rng, kind, seen)
        yield spec.slug, page, heading, body
        page += 1
    slots = sorted(rng.sample(range(spec.chunks), min(len(inner), spec.chunks)))
    inner_at = dict(zip(slots, inner))
    n_topics = len(spec.topics)
    done = 0
    for ch_no, topic in enumerate(spec.topics, 1):
        count = spec.chunks // n_topics + (ch_no <= spec.chunks % n_topics)
        chapter = f"Chapter {ch_no}: {rng.choice(TOPICS[topic]['chapters'])}"
        sections = rng.sample(TOPICS[topic]["sections"], 3)
        for i in range(count):
            section = sections[i * len(sections) // count]
            if done in inner_at:
                heading, body = _boilerplate(rng, inner_at[done], seen)
                yield spec.slug, page, _crumb(spec, chapter, heading[0] if heading else section), body
            yield spec.slug, page, _crumb(spec, chapter, section), _body(rng, spec, topic, seen)
            done += 1
            page += rng.choice([0, 1, 1, 2])
    for kind in inner[len(slots) :]:
        heading, body = _boilerplate(rng, kind, seen)
        yield spec.slug, page, heading, body
        page += 1


def _crumb(spec: SourceSpec, chapter: str, section: str) -> list[str]:
    """Breadcrumb lines: one per level, or one line with both levels joined by " > "."""
    return [f"{chapter} > {section}"] if spec.inline_breadcrumb else [chapter, section]


def sample_corpus_chunks() -> Iterator[Chunk]:
    """Every chunk of the bundled sample corpus, in bundle order."""
    seen: set[str] = set()
    for spec in SAMPLE_SOURCES:
        yield from generate_source(spec, seen)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "chunks_for_rag.txt")
    args = parser.parse_args()
    n = write_text_bundle(args.out, sample_corpus_chunks())
    print(f"wrote {n} chunks to {args.out}")


if __name__ == "__main__":
    main()
