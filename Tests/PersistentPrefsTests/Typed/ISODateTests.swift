import Foundation
import Testing

@testable import PersistentPrefs

/// The one ISO 8601 reader of `prefs-harness set`, schema dates and `defaults write -date`.
@Suite("ISO 8601 dates: the whole text, every field checked, fractions exact")
struct ISODateTests {
    /// 2024-05-01T12:00:00Z, as seconds since 1970.
    static let noon = 1_714_564_800.0

    @Test(
        "dates it reads",
        arguments: [
            ("2024-05-01", noon - 12 * 3600), ("2024-05-01T12:00:00Z", noon), ("2024-05-01T12:00:00z", noon),
            ("2024-05-01T14:00:00+02:00", noon), ("2024-05-01T14:00:00+0200", noon), ("2024-05-01T14:00:00+02", noon),
            ("2024-05-01T09:30:00-02:30", noon), ("2024-05-01T12:00:00.25Z", noon + 0.25), ("2024-05-01T12:00:00.000Z", noon),
            ("2024-02-29T00:00:00Z", 1_709_164_800),
        ])
    func reads(_ text: String, seconds: Double) throws {
        let date = try #require(PlistDates.iso8601(text), "\(text)")
        #expect(date.timeIntervalSince1970 == seconds, "\(text)")
    }

    @Test("a fraction finer than a millisecond is kept")
    func fineFraction() throws {
        let date = try #require(PlistDates.iso8601("2024-05-01T12:00:00.0001Z"))
        #expect(date.timeIntervalSinceReferenceDate == Date(timeIntervalSince1970: Self.noon).timeIntervalSinceReferenceDate + 0.0001)
    }

    @Test(
        "text that is not such a date",
        arguments: [
            "", "2024-5-1", "2024-05-01xyz", "2024-05-01T12:00:00Zxyz", "2023-02-29", "2024-04-31T12:00:00Z", "2024-13-01",
            "2024-05-01T24:00:00Z", "2024-05-01T12:60:00Z", "2024-05-01T12:00:00", "2024-05-01T12:00:00+2", "2024-05-01T12:00:00+25:00",
            "2024-05-01T12:00:00.Z", "2024-05-01 12:00:00Z", " 2024-05-01",
        ])
    func refuses(_ text: String) {
        #expect(PlistDates.iso8601(text) == nil, "\(text)")
    }

    @Test("a year past 9999 reads, for the caller to refuse naming the range")
    func farYear() throws {
        let date = try #require(PlistDates.iso8601("22024024-05-01T12:00:00Z"))
        #expect(!PlistDates.isStorable(date))
    }
}
