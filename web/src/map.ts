// The world map of the regions page, a chunk of its own (like uPlot's) so other pages do not
// load the topology: world-atlas's 110m countries, projected by d3-geo, drawn as SVG. Region
// labels are either ISO 3166-1 alpha-2 country codes (what GeoIP stamps into client_region),
// filled as countries, or cloud-style names (us-east, eu-west-1, europe-west4...) and the
// continent codes EU, OC and AN, drawn as circles at a representative place. Labels neither
// table knows are listed as not on the map. Built with createElementNS and textContent only.

import { geoEqualEarth, geoPath } from 'd3-geo';
import { feature } from 'topojson-client';
import world from 'world-atlas/countries-110m.json';

// ISO alpha-2 -> the topology's ids (ISO numeric), for the 174 countries the 110m file has
// (generated once from i18n-iso-countries; Kosovo has no numeric code and goes by name).
const kIso = 'AE:784 AF:004 AL:008 AM:051 AO:024 AQ:010 AR:032 AT:040 AU:036 AZ:031 BA:070 BD:050 BE:056 BF:854 BG:100 BI:108 BJ:204 BN:096 BO:068 BR:076 BS:044 BT:064 BW:072 BY:112 BZ:084 CA:124 CD:180 CF:140 CG:178 CH:756 CI:384 CL:152 CM:120 CN:156 CO:170 CR:188 CU:192 CY:196 CZ:203 DE:276 DJ:262 DK:208 DO:214 DZ:012 EC:218 EE:233 EG:818 EH:732 ER:232 ES:724 ET:231 FI:246 FJ:242 FK:238 FR:250 GA:266 GB:826 GE:268 GH:288 GL:304 GM:270 GN:324 GQ:226 GR:300 GT:320 GW:624 GY:328 HN:340 HR:191 HT:332 HU:348 ID:360 IE:372 IL:376 IN:356 IQ:368 IR:364 IS:352 IT:380 JM:388 JO:400 JP:392 KE:404 KG:417 KH:116 KP:408 KR:410 KW:414 KZ:398 LA:418 LB:422 LK:144 LR:430 LS:426 LT:440 LU:442 LV:428 LY:434 MA:504 MD:498 ME:499 MG:450 MK:807 ML:466 MM:104 MN:496 MR:478 MW:454 MX:484 MY:458 MZ:508 NA:516 NC:540 NE:562 NG:566 NI:558 NL:528 NO:578 NP:524 NZ:554 OM:512 PA:591 PE:604 PG:598 PH:608 PK:586 PL:616 PR:630 PS:275 PT:620 PY:600 QA:634 RO:642 RS:688 RU:643 RW:646 SA:682 SB:090 SD:729 SE:752 SI:705 SK:703 SL:694 SN:686 SO:706 SR:740 SS:728 SV:222 SY:760 SZ:748 TD:148 TF:260 TG:768 TH:764 TJ:762 TL:626 TM:795 TN:788 TR:792 TT:780 TW:158 TZ:834 UA:804 UG:800 US:840 UY:858 UZ:860 VE:862 VN:704 VU:548 YE:887 ZA:710 ZM:894 ZW:716';
const kAlpha2 = new Map<string, string>(kIso.split(' ').map((p) => p.split(':') as [string, string]));
kAlpha2.set('XK', 'name:Kosovo');

// [lon, lat] of a city that stands for the region. AWS-, GCP- and Azure-style names; a label
// with a trailing "-1" or "1" also finds its stem (eu-west-1 -> eu-west).
const kPlaces: Record<string, [number, number]> = {
  'us-east': [-77.5, 38.9], 'us-east-1': [-77.5, 38.9], 'us-east-2': [-83.0, 40.0], 'us-west': [-121.8, 45.6], 'us-west-1': [-122.0, 37.4],
  'us-west-2': [-121.8, 45.6], 'us-central': [-93.6, 41.6], 'ca-central': [-73.6, 45.5], 'sa-east': [-46.6, -23.5],
  'eu-west': [-6.3, 53.3], 'eu-west-2': [-0.1, 51.5], 'eu-west-3': [2.35, 48.9], 'eu-central': [8.7, 50.1], 'eu-north': [18.1, 59.3],
  'eu-south': [9.2, 45.5], 'ap-southeast': [103.8, 1.35], 'ap-southeast-2': [151.2, -33.9], 'ap-northeast': [139.7, 35.7],
  'ap-northeast-2': [127.0, 37.5], 'ap-northeast-3': [135.5, 34.7], 'ap-south': [72.9, 19.1], 'ap-east': [114.2, 22.3],
  'me-south': [50.6, 26.1], 'me-central': [54.4, 24.5], 'af-south': [18.4, -33.9], 'il-central': [34.8, 32.1],
  'us-central1': [-93.6, 41.6], 'us-east1': [-80.0, 33.2], 'us-east4': [-77.5, 38.9], 'us-east5': [-83.0, 40.0], 'us-west1': [-121.2, 45.6],
  'us-west2': [-118.2, 34.1], 'us-west4': [-115.1, 36.2], 'us-south1': [-96.8, 32.8], 'northamerica-northeast1': [-73.6, 45.5],
  'southamerica-east1': [-46.6, -23.5], 'europe-west1': [3.8, 50.4], 'europe-west2': [-0.1, 51.5], 'europe-west3': [8.7, 50.1],
  'europe-west4': [6.8, 53.4], 'europe-west6': [8.5, 47.4], 'europe-west9': [2.35, 48.9], 'europe-north1': [27.2, 60.6],
  'europe-central2': [21.0, 52.2], 'asia-east1': [120.6, 24.1], 'asia-east2': [114.2, 22.3], 'asia-northeast1': [139.7, 35.7],
  'asia-northeast3': [127.0, 37.5], 'asia-south1': [72.9, 19.1], 'asia-southeast1': [103.8, 1.35], 'australia-southeast1': [151.2, -33.9],
  eastus: [-79.0, 37.4], eastus2: [-78.4, 36.7], centralus: [-93.6, 41.6], westus: [-122.4, 37.8], westus2: [-119.9, 47.2], westus3: [-112.1, 33.4],
  northeurope: [-6.3, 53.3], westeurope: [4.9, 52.4], uksouth: [-0.1, 51.5], francecentral: [2.35, 48.9], germanywestcentral: [8.7, 50.1],
  swedencentral: [17.1, 60.7], southeastasia: [103.8, 1.35], eastasia: [114.2, 22.3], japaneast: [139.7, 35.7], australiaeast: [151.2, -33.9],
  centralindia: [73.9, 18.5], brazilsouth: [-46.6, -23.5], canadacentral: [-79.4, 43.7],
  // GeoIP continent codes that are not also country codes (AF, AS, NA and SA are read as the
  // countries Afghanistan, American Samoa, Namibia and Saudi Arabia: a country is what GeoIP
  // stamps when it knows one).
  EU: [15.0, 50.0], OC: [140.0, -25.0], AN: [0.0, -80.0],
};

export type Placement = { kind: 'country'; id: string } | { kind: 'point'; lonlat: [number, number] } | { kind: 'none' };

/** Where a region label goes on the map. */
export function place(label: string): Placement {
  const t = label.trim();
  if (/^[A-Z]{2}$/.test(t)) {
    const id = kAlpha2.get(t);
    if (id) return { kind: 'country', id };
    const p = kPlaces[t];
    return p ? { kind: 'point', lonlat: p } : { kind: 'none' };
  }
  const k = t.toLowerCase();
  const p = kPlaces[k] ?? kPlaces[k.replace(/-?1$/, '')];
  return p ? { kind: 'point', lonlat: p } : { kind: 'none' };
}

export interface MapItem {
  label: string;
  /** null: insufficient data (hatched) or no value. */
  value: number | null;
  fill: string | null;
  /** Tooltip text: label, value with its unit, n. */
  title: string;
}

const kNs = 'http://www.w3.org/2000/svg';

function s<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number>, ...children: Array<Node | string>): SVGElementTagNameMap[K] {
  const el = document.createElementNS(kNs, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  for (const c of children) el.append(typeof c === 'string' ? document.createTextNode(c) : c);
  return el;
}

const kWidth = 960;
const kHeight = 470;
let countries: ReturnType<typeof loadCountries> | null = null;

function loadCountries() {
  const fc = feature(world, world.objects.countries);
  return fc.features.map((f) => ({ key: f.id !== undefined ? String(f.id) : `name:${f.properties.name}`, name: f.properties.name, f }));
}

/** The map: every country outlined, the items' countries filled and their cloud regions as
 *  labelled circles. Returns the SVG and the labels that have no place on it. */
export function worldMap(items: readonly MapItem[], label: string, describedBy: string): { svg: SVGSVGElement; unplaced: MapItem[] } {
  countries ??= loadCountries();
  const projection = geoEqualEarth().fitExtent([[6, 6], [kWidth - 6, kHeight - 6]], { type: 'Sphere' });
  const path = geoPath(projection);
  const byCountry = new Map<string, MapItem>();
  const points: Array<{ item: MapItem; xy: [number, number] }> = [];
  const unplaced: MapItem[] = [];
  for (const item of items) {
    const p = place(item.label);
    if (p.kind === 'country') byCountry.set(p.id, item);
    else if (p.kind === 'point') {
      const xy = projection(p.lonlat);
      if (xy) points.push({ item, xy: [xy[0], xy[1]] });
      else unplaced.push(item);
    } else unplaced.push(item);
  }
  const hatch = s(
    'pattern',
    { id: 'map-hatch', width: 6, height: 6, patternUnits: 'userSpaceOnUse', patternTransform: 'rotate(45)' },
    s('rect', { width: 6, height: 6, class: 'map-hatch-bg' }),
    s('line', { x1: 0, y1: 0, x2: 0, y2: 6, class: 'map-hatch-line' }),
  );
  const fillOf = (item: MapItem) => item.fill ?? 'url(#map-hatch)';
  const svg = s(
    'svg',
    { viewBox: `0 0 ${kWidth} ${kHeight}`, class: 'world-map', role: 'img', 'aria-label': label, 'aria-describedby': describedBy, 'data-countries': byCountry.size, 'data-points': points.length },
    s('defs', {}, hatch),
    s('path', { d: path({ type: 'Sphere' }) ?? '', class: 'map-sphere' }),
    s(
      'g',
      { class: 'map-countries' },
      ...countries.map(({ key, name, f }) => {
        const item = byCountry.get(key);
        const el = s('path', { d: path(f) ?? '', class: item ? 'map-country has-data' : 'map-country' });
        if (item) {
          el.setAttribute('fill', fillOf(item));
          el.setAttribute('data-region', item.label);
          el.append(s('title', {}, `${item.title} (${name})`));
        }
        return el;
      }),
    ),
    s(
      'g',
      { class: 'map-points' },
      ...points.map(({ item, xy }) =>
        s(
          'g',
          { class: 'map-point', 'data-region': item.label, transform: `translate(${xy[0].toFixed(1)} ${xy[1].toFixed(1)})` },
          s('circle', { r: 8, fill: fillOf(item) }, s('title', {}, item.title)),
          s('text', { x: 11, y: 4 }, item.label),
        ),
      ),
    ),
  );
  return { svg, unplaced };
}
